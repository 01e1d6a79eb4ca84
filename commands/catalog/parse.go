package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits of a catalog (doc.go states the rules they belong to).
const (
	// MaxSize is the largest catalog file accepted, in bytes.
	MaxSize = 1 << 20
	// MaxReward is the largest reward amount. It is the bound POST
	// /v1/core/missions puts on each reward field, so that every template can be
	// published as a mission; it is also well below 2^53, so every JSON client
	// reads it exactly.
	MaxReward = 1_000_000_000_000
	// MaxPayload bounds a template's payload once encoded, in bytes: the bound of
	// a mission's payload.
	MaxPayload = 64 << 10

	maxTitle       = 200  // runes
	maxDescription = 4000 // runes
)

var (
	slugPattern    = regexp.MustCompile(`^[a-z0-9-]{2,40}$`)
	versionPattern = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z.+-]{0,63}$`)
)

// The fields of each object of the file. Keys outside these lists are refused so
// that a typo such as "agent_credits" never silently becomes a zero reward.
var (
	catalogFields  = []string{"version", "stages", "roles", "factions", "strategies", "domains", "mission_templates", "mission_packs", "starter_missions"}
	entryFields    = []string{"id", "title", "description"}
	roleFields     = []string{"id", "title", "description", "focus_domains"}
	templateFields = []string{"id", "title", "description", "domain", "required_role", "required_faction", "reward", "payload", "sets"}
	rewardFields   = []string{"agent_credit", "reputation", "capacity", "treasury_share_credit"}
	packFields     = []string{"id", "title", "description", "default"}
)

// Parse reads a catalog file and validates it against the rules in doc.go. A
// refusal is an *Error naming the JSON path of the first problem found.
func Parse(data []byte) (*Catalog, error) {
	if len(data) > MaxSize {
		return nil, &Error{Message: fmt.Sprintf("the file is %d bytes; a catalog may be at most %d", len(data), MaxSize)}
	}
	tree, err := readTree(data)
	if err != nil {
		return nil, err
	}
	p := &parser{ids: map[string]map[string]string{}}
	c := p.catalog(tree)
	if p.err != nil {
		return nil, p.err
	}
	return c, nil
}

// parser builds a Catalog from a tree. It keeps the first problem and carries on
// with zero values, so each step reads straight through without error plumbing;
// later problems, possibly knock-on effects of the first, are dropped.
type parser struct {
	err *Error
	// ids maps a kind ("role", "domain", …) to its ids, each with the path of
	// the entry that defines it.
	ids map[string]map[string]string
}

func (p *parser) fail(path, format string, args ...any) {
	if p.err == nil {
		p.err = &Error{Path: path, Message: fmt.Sprintf(format, args...)}
	}
}

func (p *parser) catalog(tree any) *Catalog {
	o := p.object("", tree, catalogFields)
	c := &Catalog{Version: p.str(o, "", "version")}
	if o != nil && p.err == nil && !versionPattern.MatchString(c.Version) {
		p.fail("version", "%q is not a version: 1 to 64 characters of letters, digits, '.', '+' and '-', starting with a letter or digit", c.Version)
	}
	// Kinds are read before the kinds that refer to them, so every reference is
	// checked where it appears.
	c.Domains = p.entries(o, "domains", "domain")
	c.Factions = p.entries(o, "factions", "faction")
	c.Strategies = p.entries(o, "strategies", "strategy")
	c.Stages = p.entries(o, "stages", "stage")
	c.Roles = p.roles(o)
	c.MissionPacks = p.packs(o)
	c.MissionTemplates = p.templates(o)
	c.StarterMissions = p.starter(o, c.MissionTemplates)
	p.checkPacksUsed(c)
	return c
}

func (p *parser) entries(o *object, key, kind string) []Entry {
	var out []Entry
	for i, v := range p.list(o, "", key, kind) {
		path := indexPath(key, i)
		e := p.object(path, v, entryFields)
		out = append(out, Entry{
			ID:          p.id(e, path, kind),
			Title:       p.title(e, path),
			Description: p.description(e, path),
		})
	}
	return out
}

func (p *parser) roles(o *object) []Role {
	var out []Role
	for i, v := range p.list(o, "", "roles", "role") {
		path := indexPath("roles", i)
		e := p.object(path, v, roleFields)
		r := Role{ID: p.id(e, path, "role"), Title: p.title(e, path), Description: p.description(e, path)}
		r.FocusDomains = p.refList(e, path, "focus_domains", "domain")
		out = append(out, r)
	}
	return out
}

func (p *parser) packs(o *object) []MissionPack {
	var out []MissionPack
	def := -1
	for i, v := range p.list(o, "", "mission_packs", "mission pack") {
		path := indexPath("mission_packs", i)
		e := p.object(path, v, packFields)
		pk := MissionPack{ID: p.id(e, path, "mission pack"), Title: p.title(e, path), Description: p.description(e, path)}
		pk.Default = p.optionalBool(e, path, "default")
		if pk.Default {
			if def >= 0 {
				p.fail(fieldPath(path, "default"), "mission_packs[%d] is the default already; exactly one pack may be", def)
			}
			def = i
		}
		out = append(out, pk)
	}
	if def < 0 && len(out) > 0 {
		p.fail("mission_packs", `no pack is the default; mark exactly one with "default": true`)
	}
	return out
}

func (p *parser) templates(o *object) []MissionTemplate {
	var out []MissionTemplate
	for i, v := range p.list(o, "", "mission_templates", "mission template") {
		path := indexPath("mission_templates", i)
		e := p.object(path, v, templateFields)
		t := MissionTemplate{ID: p.id(e, path, "mission template"), Title: p.title(e, path), Description: p.description(e, path)}
		t.Domain = p.ref(fieldPath(path, "domain"), p.str(e, path, "domain"), "domain")
		t.RequiredRole = p.optionalRef(e, path, "required_role", "role")
		t.RequiredFaction = p.optionalRef(e, path, "required_faction", "faction")
		t.Reward = p.reward(e, path)
		t.Payload = p.payload(e, path)
		t.Sets = p.sets(e, path)
		out = append(out, t)
	}
	return out
}

func (p *parser) reward(o *object, path string) Reward {
	v, ok := p.field(o, path, "reward", true)
	if !ok {
		return Reward{}
	}
	path = fieldPath(path, "reward")
	r := p.object(path, v, rewardFields)
	return Reward{
		AgentCredit:         p.amount(r, path, "agent_credit"),
		Reputation:          p.amount(r, path, "reputation"),
		Capacity:            p.amount(r, path, "capacity"),
		TreasuryShareCredit: p.amount(r, path, "treasury_share_credit"),
	}
}

// payload is the template's payload re-encoded compactly (keys sorted), or {}.
func (p *parser) payload(o *object, path string) json.RawMessage {
	v, ok := p.field(o, path, "payload", false)
	if !ok {
		return json.RawMessage(`{}`)
	}
	if _, isObj := v.(*object); !isObj {
		p.fail(fieldPath(path, "payload"), "must be an object, not %s", kindOf(v))
		return json.RawMessage(`{}`)
	}
	if n, ok := firstBadNumber(v); ok {
		p.fail(fieldPath(path, "payload"), "holds the number %s, which is outside the range of a 64-bit float", n)
		return json.RawMessage(`{}`)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // payload strings reach the claimer as written
	if err := enc.Encode(plain(v)); err != nil {
		p.fail(fieldPath(path, "payload"), "cannot be encoded: %v", err)
		return json.RawMessage(`{}`)
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if len(b) > MaxPayload {
		p.fail(fieldPath(path, "payload"), "is %d bytes encoded; a payload may be at most %d", len(b), MaxPayload)
		return json.RawMessage(`{}`)
	}
	return json.RawMessage(b)
}

// firstBadNumber finds a number no JSON client can hold as a float64; the event
// log's canonical JSON (RFC 8785) cannot encode one either.
func firstBadNumber(v any) (json.Number, bool) {
	switch t := v.(type) {
	case json.Number:
		if _, err := strconv.ParseFloat(t.String(), 64); err != nil {
			return t, true
		}
	case *object:
		for _, k := range t.keys {
			if n, bad := firstBadNumber(t.vals[k]); bad {
				return n, true
			}
		}
	case []any:
		for _, e := range t {
			if n, bad := firstBadNumber(e); bad {
				return n, true
			}
		}
	}
	return "", false
}

// sets reads a template's set names: SetStarter or PackSet of an existing pack.
func (p *parser) sets(o *object, path string) []string {
	var out []string
	for i, v := range p.list(o, path, "sets", "set") {
		ip := indexPath(fieldPath(path, "sets"), i)
		s, ok := v.(string)
		if !ok {
			p.fail(ip, "must be a string, not %s", kindOf(v))
			continue
		}
		if pack, isPack := packOfSet(s); isPack {
			if _, known := p.ids["mission pack"][pack]; !known {
				p.fail(ip, "%q is not a mission pack", pack)
			}
		} else if s != SetStarter {
			p.fail(ip, "%q is not a set: use %q or %q", s, SetStarter, PackSet("<mission pack id>"))
		}
		if j := slices.Index(out, s); j >= 0 {
			p.fail(ip, "repeats %s[%d]", fieldPath(path, "sets"), j)
		}
		out = append(out, s)
	}
	return out
}

// starter reads starter_missions, which must list exactly the templates whose
// sets include SetStarter: the list fixes their order, the sets their membership,
// and a disagreement between the two is a mistake in the file.
func (p *parser) starter(o *object, templates []MissionTemplate) []string {
	ids := p.refList(o, "", "starter_missions", "mission template")
	for i, id := range ids {
		if t, ok := templateByID(templates, id); ok && !slices.Contains(t.Sets, SetStarter) {
			p.fail(indexPath("starter_missions", i), "mission template %q is not in the starter set; add %q to its sets", id, SetStarter)
		}
	}
	for i, t := range templates {
		if j := slices.Index(t.Sets, SetStarter); j >= 0 && !slices.Contains(ids, t.ID) {
			p.fail(indexPath(fieldPath(indexPath("mission_templates", i), "sets"), j), "mission template %q is in the starter set but missing from starter_missions", t.ID)
		}
	}
	return ids
}

// checkPacksUsed refuses a pack without templates: installing it would publish
// nothing, which is surely not what its author meant.
func (p *parser) checkPacksUsed(c *Catalog) {
	for i, pk := range c.MissionPacks {
		if len(c.PackTemplates(pk.ID)) == 0 {
			p.fail(indexPath("mission_packs", i), "mission pack %q has no templates; add %q to the sets of at least one", pk.ID, PackSet(pk.ID))
		}
	}
}

func templateByID(ts []MissionTemplate, id string) (MissionTemplate, bool) {
	i := slices.IndexFunc(ts, func(t MissionTemplate) bool { return t.ID == id })
	if i < 0 {
		return MissionTemplate{}, false
	}
	return ts[i], true
}

// object checks that v is an object with no fields outside fields. It returns
// nil, after recording the problem, when v is not an object.
func (p *parser) object(path string, v any, fields []string) *object {
	o, ok := v.(*object)
	if !ok {
		if path == "" {
			p.fail("", "the catalog must be a JSON object, not %s", kindOf(v))
		} else {
			p.fail(path, "must be an object, not %s", kindOf(v))
		}
		return nil
	}
	for _, k := range o.keys {
		if !slices.Contains(fields, k) {
			p.fail(fieldPath(path, k), "unknown field; the fields here are %s", strings.Join(fields, ", "))
		}
	}
	return o
}

// field returns o's field key; a missing required field is recorded. A nil o (a
// refused object) has no fields and records nothing more.
func (p *parser) field(o *object, path, key string, required bool) (any, bool) {
	if o == nil {
		return nil, false
	}
	v, ok := o.vals[key]
	if !ok && required {
		p.fail(fieldPath(path, key), "is required")
	}
	return v, ok
}

func (p *parser) str(o *object, path, key string) string {
	v, ok := p.field(o, path, key, true)
	if !ok {
		return ""
	}
	s, isStr := v.(string)
	if !isStr {
		p.fail(fieldPath(path, key), "must be a string, not %s", kindOf(v))
	}
	return s
}

// list returns the array o.key, which must hold at least one item (of what).
func (p *parser) list(o *object, path, key, what string) []any {
	v, ok := p.field(o, path, key, true)
	if !ok {
		return nil
	}
	l, isList := v.([]any)
	switch {
	case !isList:
		p.fail(fieldPath(path, key), "must be an array, not %s", kindOf(v))
	case len(l) == 0:
		p.fail(fieldPath(path, key), "must hold at least one %s", what)
	}
	return l
}

// id reads the id of an entry of kind and registers it; ids are unique within a
// kind.
func (p *parser) id(o *object, path, kind string) string {
	s := p.str(o, path, "id")
	if o == nil || p.err != nil {
		return s
	}
	ip := fieldPath(path, "id")
	if !slugPattern.MatchString(s) {
		p.fail(ip, "%q is not an id: 2 to 40 characters of a-z, 0-9 and -", s)
		return s
	}
	ids := p.ids[kind]
	if ids == nil {
		ids = map[string]string{}
		p.ids[kind] = ids
	}
	if first, dup := ids[s]; dup {
		p.fail(ip, "%q is already the id of %s", s, first)
	}
	ids[s] = path
	return s
}

// ref checks that id names an entry of kind read earlier.
func (p *parser) ref(path, id, kind string) string {
	if p.err == nil {
		if _, ok := p.ids[kind][id]; !ok {
			p.fail(path, "%q is not a %s", id, kind)
		}
	}
	return id
}

// optionalRef reads a reference that may be null or left out (nil: no restriction).
func (p *parser) optionalRef(o *object, path, key, kind string) *string {
	v, ok := p.field(o, path, key, false)
	if !ok || v == nil {
		return nil
	}
	s, isStr := v.(string)
	if !isStr {
		p.fail(fieldPath(path, key), "must be a string or null, not %s", kindOf(v))
		return nil
	}
	p.ref(fieldPath(path, key), s, kind)
	return &s
}

// refList reads a non-empty array of distinct references to kind.
func (p *parser) refList(o *object, path, key, kind string) []string {
	var out []string
	for i, v := range p.list(o, path, key, kind) {
		ip := indexPath(fieldPath(path, key), i)
		s, ok := v.(string)
		if !ok {
			p.fail(ip, "must be a string, not %s", kindOf(v))
			continue
		}
		p.ref(ip, s, kind)
		if j := slices.Index(out, s); j >= 0 {
			p.fail(ip, "repeats %s[%d]", fieldPath(path, key), j)
		}
		out = append(out, s)
	}
	return out
}

func (p *parser) optionalBool(o *object, path, key string) bool {
	v, ok := p.field(o, path, key, false)
	if !ok {
		return false
	}
	b, isBool := v.(bool)
	if !isBool {
		p.fail(fieldPath(path, key), "must be true or false, not %s", kindOf(v))
	}
	return b
}

// amount reads a reward amount: an integer from 0 to MaxReward, written without
// a fraction or exponent.
func (p *parser) amount(o *object, path, key string) int64 {
	v, ok := p.field(o, path, key, true)
	if !ok {
		return 0
	}
	fp := fieldPath(path, key)
	n, isNum := v.(json.Number)
	if !isNum {
		p.fail(fp, "must be an integer, not %s", kindOf(v))
		return 0
	}
	i, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil || i < 0 || i > MaxReward {
		p.fail(fp, "must be an integer from 0 to %d, not %s", int64(MaxReward), n)
		return 0
	}
	return i
}

// title: 1 to 200 characters on one line, not only spaces.
func (p *parser) title(o *object, path string) string {
	s := p.str(o, path, "title")
	if o != nil && p.err == nil {
		p.checkText(fieldPath(path, "title"), s, maxTitle, false)
	}
	return s
}

// description: 1 to 4000 characters; line breaks allowed.
func (p *parser) description(o *object, path string) string {
	s := p.str(o, path, "description")
	if o != nil && p.err == nil {
		p.checkText(fieldPath(path, "description"), s, maxDescription, true)
	}
	return s
}

// checkText refuses empty text and control characters, which would let catalog
// text forge lines in logs and terminals; newline is allowed where multiline.
func (p *parser) checkText(path, s string, maxRunes int, multiline bool) {
	switch {
	case strings.TrimSpace(s) == "":
		p.fail(path, "must not be empty")
	case utf8.RuneCountInString(s) > maxRunes:
		p.fail(path, "must be at most %d characters, not %d", maxRunes, utf8.RuneCountInString(s))
	case strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) && !(multiline && r == '\n') }) >= 0:
		if multiline {
			p.fail(path, "must not contain control characters other than newline")
		} else {
			p.fail(path, "must not contain control characters")
		}
	}
}
