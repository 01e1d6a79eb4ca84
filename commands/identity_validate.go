package commands

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/civnode/civnode/eventlog"
)

// Input rules of the identity commands (docs/api.md). An empty string is never a
// value: optional fields are unset with null (or by leaving them out), so "" is
// refused rather than stored as a second kind of "unset".
var (
	// publicIDPattern: public slugs, given or generated.
	publicIDPattern = regexp.MustCompile(`^[a-z0-9-]{3,40}$`)
	// subnetIDPattern: subnet and zone ids (home_subnet_id, home_zone_id,
	// subnet_memberships).
	subnetIDPattern = regexp.MustCompile(`^[a-z0-9-]{1,64}$`)
	// controllerKindPattern: controller kinds are open-ended names such as
	// local_model, remote_orchestrator or human_operator.
	controllerKindPattern = regexp.MustCompile(`^[a-z0-9_]{1,40}$`)
)

const (
	maxDisplayName   = 64  // runes
	maxLabel         = 128 // runes: model_provider, wallet_adapter, capabilities, node_id
	maxControllerRef = 256 // runes
	maxListLen       = 64  // capabilities_granted, subnet_memberships
	maxAgentDID      = 128 // bytes; an Ed25519 did:key is 56
	minPublicID      = 3
	maxPublicID      = 40
)

// checkDisplayName: required, 1..64 runes of valid UTF-8, no control characters,
// not only spaces.
func checkDisplayName(s string) error {
	if s == "" {
		return Missing("display_name")
	}
	if err := checkText("display_name", s, maxDisplayName); err != nil {
		return err
	}
	if strings.TrimSpace(s) == "" {
		return Invalid("display_name", "display_name must contain a visible character")
	}
	return nil
}

// checkText: 1..max runes of valid UTF-8 without control characters, which would
// let a name forge line breaks in logs and terminals.
func checkText(field, s string, max int) error {
	switch {
	case s == "":
		return Invalid(field, "%s must not be empty; leave it out or send null to unset it", field)
	case !utf8.ValidString(s):
		return Invalid(field, "%s must be valid UTF-8", field)
	case utf8.RuneCountInString(s) > max:
		return Invalid(field, "%s must be at most %d characters", field, max)
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return Invalid(field, "%s must not contain control characters", field)
	}
	return nil
}

// checkOptionalText is checkText for an optional field; nil is unset.
func checkOptionalText(field string, s *string, max int) error {
	if s == nil {
		return nil
	}
	return checkText(field, *s, max)
}

// ValidPublicID reports whether s has the form of a public slug.
func ValidPublicID(s string) bool { return publicIDPattern.MatchString(s) }

func checkPublicID(s string) error {
	if !publicIDPattern.MatchString(s) {
		return Invalid("public_id", "public_id must be 3 to 40 characters of a-z, 0-9 and -")
	}
	return nil
}

func checkSubnetID(field string, s *string) error {
	if s != nil && !subnetIDPattern.MatchString(*s) {
		return Invalid(field, "%s must be 1 to 64 characters of a-z, 0-9 and -", field)
	}
	return nil
}

// checkChoice checks an optional value against accepted values (ids of the game
// catalog).
func checkChoice(field string, s *string, accepted []string) error {
	if s != nil && !slices.Contains(accepted, *s) {
		return Invalid(field, "%s must be one of %s", field, strings.Join(accepted, ", "))
	}
	return nil
}

// checkAgentDID: required and an Ed25519 did:key; whether it names an identity is
// decided later, against the decision model (404).
func checkAgentDID(s string) error {
	if s == "" {
		return Missing("agent_did")
	}
	if len(s) > maxAgentDID {
		return Invalid("agent_did", "agent_did must be an Ed25519 did:key")
	}
	if _, err := eventlog.PublicKeyFromDID(s); err != nil {
		return Invalid("agent_did", "agent_did must be an Ed25519 did:key")
	}
	return nil
}

// checkList checks every item with check and refuses duplicates and long lists.
// A nil list is the empty list.
func checkList(field string, items []string, check func(string) bool, rule string) ([]string, error) {
	if len(items) > maxListLen {
		return nil, Invalid(field, "%s may hold at most %d items", field, maxListLen)
	}
	seen := make(map[string]bool, len(items))
	for i, s := range items {
		if !check(s) {
			return nil, Invalid(field, "%s[%d] must be %s", field, i, rule)
		}
		if seen[s] {
			return nil, Invalid(field, "%s[%d] repeats %q", field, i, s)
		}
		seen[s] = true
	}
	return append([]string{}, items...), nil
}

func isLabel(s string) bool { return checkText("", s, maxLabel) == nil }

func isSubnetID(s string) bool { return subnetIDPattern.MatchString(s) }

// slugBase turns a display name into the stem of a generated public_id: lowercase,
// every run of characters other than a-z and 0-9 becomes one dash, no dash at
// either end, at most 40 characters; a stem shorter than 3 gets "-agent" appended
// (or is "agent" when nothing is left, as for a name in a non-Latin script).
func slugBase(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
			continue
		}
		dash = true
	}
	s := trimSlug(b.String(), maxPublicID)
	switch {
	case s == "":
		return "agent"
	case len(s) < minPublicID:
		return s + "-agent"
	}
	return s
}

// trimSlug cuts s to at most n bytes (slugs are ASCII) without a trailing dash.
func trimSlug(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	return strings.TrimRight(s, "-")
}

// slugCandidate is the i-th public_id tried for base: base itself, then base-2,
// base-3, … with base shortened so that the suffix fits in 40 characters.
func slugCandidate(base string, i int) string {
	if i <= 1 {
		return base
	}
	suffix := "-" + strconv.Itoa(i)
	stem := trimSlug(base, maxPublicID-len(suffix))
	if stem == "" {
		stem = "agent"
	}
	return stem + suffix
}
