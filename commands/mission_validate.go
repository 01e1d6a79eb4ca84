package commands

import (
	"bytes"
	"encoding/json"
	"github.com/civnode/civnode/eventlog"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/civnode/civnode/eventlog/events"
)

// Input rules of the mission commands (docs/api.md).
const (
	maxTitle       = 200       // runes
	maxDescription = 10000     // runes
	maxPayload     = 64 << 10  // bytes of the canonical JSON
	maxResult      = 256 << 10 // bytes
	// maxRewardField bounds each reward field, so that no sum of rewards a node
	// could ever settle overflows an int64 balance and every amount is exact in
	// the IEEE doubles of RFC 8785 and JavaScript.
	maxRewardField = 1_000_000_000_000
)

// slugPattern: domain, subnet_id, zone_id and the publisher of a subnet, like the
// subnet ids of the identity commands. IsSlug checks it without the regexp
// engine (every create checks four slugs); a test holds the two equal.
var slugPattern = regexp.MustCompile(`^[a-z0-9-]{1,64}$`)

// PublisherKinds are the accepted values of publisher_kind.
var PublisherKinds = []string{events.PublisherAgent, events.PublisherOrganization, events.PublisherPlanetaryGovernment}

func checkSlug(field, s string) error {
	if s == "" {
		return Missing(field)
	}
	if !IsSlug(s) {
		return Invalid(field, "%s must be 1 to 64 characters of a-z, 0-9 and -", field)
	}
	return nil
}

// checkLongText: required, at most max runes, no control characters but line
// breaks and tabs, and something visible.
func checkLongText(field, s string, max int) error {
	switch {
	case s == "":
		return Missing(field)
	case !utf8.ValidString(s):
		return Invalid(field, "%s must be valid UTF-8", field)
	case utf8.RuneCountInString(s) > max:
		return Invalid(field, "%s must be at most %d characters", field, max)
	case strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\r' && r != '\t' }) >= 0:
		return Invalid(field, "%s must not contain control characters other than line breaks and tabs", field)
	case strings.TrimSpace(s) == "":
		return Invalid(field, "%s must contain a visible character", field)
	}
	return nil
}

// RewardInput is the reward of a new mission. Every field is required, so that a
// forgotten field is an error rather than a reward of 0.
type RewardInput struct {
	AgentCredit         *int64 `json:"agent_credit"`
	Reputation          *int64 `json:"reputation"`
	Capacity            *int64 `json:"capacity"`
	TreasuryShareCredit *int64 `json:"treasury_share_credit"`
}

func (in *RewardInput) reward() (events.Reward, error) {
	if in == nil {
		return events.Reward{}, Missing("reward")
	}
	var r events.Reward
	for _, f := range []struct {
		name string
		v    *int64
		to   *int64
	}{
		{"reward.agent_credit", in.AgentCredit, &r.AgentCredit},
		{"reward.reputation", in.Reputation, &r.Reputation},
		{"reward.capacity", in.Capacity, &r.Capacity},
		{"reward.treasury_share_credit", in.TreasuryShareCredit, &r.TreasuryShareCredit},
	} {
		switch {
		case f.v == nil:
			return r, Missing(f.name)
		case *f.v < 0 || *f.v > maxRewardField:
			return r, Invalid(f.name, "%s must be an integer from 0 to %d", f.name, int64(maxRewardField))
		}
		*f.to = *f.v
	}
	return r, nil
}

// canonicalMissionPayload checks the payload of a new mission: a JSON object, at
// most 64 KiB once canonical (RFC 8785), and one the event log can canonicalise
// (no duplicate keys, numbers within IEEE double range). Omitted or null is {}.
func canonicalMissionPayload(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage(`{}`), nil
	}
	if raw[0] != '{' {
		return nil, Invalid("payload", "payload must be a JSON object")
	}
	if len(raw) > 4*maxPayload {
		return nil, Invalid("payload", "payload must be at most %d bytes", maxPayload)
	}
	out, err := eventlog.CanonicalObject(raw)
	if err != nil {
		return nil, Invalid("payload", "payload cannot be stored: %v", err)
	}
	if len(out) > maxPayload {
		return nil, Invalid("payload", "payload must be at most %d bytes", maxPayload)
	}
	return out, nil
}

// checkOptionalChoice is checkChoice for a value that must also not be "".
func checkOptionalChoice(field string, s *string, accepted []string) error {
	if s != nil && !slices.Contains(accepted, *s) {
		return Invalid(field, "%s must be one of %s, or null", field, strings.Join(accepted, ", "))
	}
	return nil
}

// IsSlug reports whether s is a well-formed domain, subnet or zone id: 1 to 64
// characters of a-z, 0-9 and -. Public ids are slugs too.
func IsSlug(s string) bool {
	if len(s) < 1 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
