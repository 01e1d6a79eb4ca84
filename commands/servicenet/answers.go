package servicenet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// Decoding the registry's answers. The node relays them to its clients and
// records them in events, so each must be exactly the documented shape
// (docs/api.md, "Agent registry proxy": the agent summary, the agent card, the
// task, the invoke responses): a required member missing or of the wrong type, or a
// status outside the contract, makes the whole answer malformed rather than
// half-read. Members the contract does not name are ignored, so a registry
// may grow its answers without breaking nodes.

// object is one JSON object of an answer, member by member.
type object map[string]json.RawMessage

// parseObject reads data, which must be exactly one JSON object.
func parseObject(data []byte) (object, error) {
	var o object
	if err := json.Unmarshal(data, &o); err != nil || o == nil {
		return nil, errors.New("not a JSON object")
	}
	return o, nil
}

// member returns the raw value of name; null counts as absent.
func (o object) member(name string) (json.RawMessage, bool) {
	raw := bytes.TrimSpace(o[name])
	if len(raw) == 0 || string(raw) == "null" {
		return nil, false
	}
	return raw, true
}

// str reads a string member; "" when an optional one is absent.
func (o object) str(name string, required bool) (string, error) {
	raw, ok := o.member(name)
	if !ok {
		if required {
			return "", fmt.Errorf("member %q is missing", name)
		}
		return "", nil
	}
	var s string
	if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", fmt.Errorf("member %q is not a string", name)
	}
	return s, nil
}

// id reads a string member that must be a registry id (docs/servicenet.md), since
// the node will put it in a URL later.
func (o object) id(name string, required bool) (string, error) {
	s, err := o.str(name, required)
	if err != nil || s == "" && !required {
		return s, err
	}
	if !ValidID(s) {
		return "", fmt.Errorf("member %q is not a valid id", name)
	}
	return s, nil
}

// boolean reads an optional boolean member; present says whether it was there.
func (o object) boolean(name string) (v, present bool, err error) {
	raw, ok := o.member(name)
	if !ok {
		return false, false, nil
	}
	switch string(raw) {
	case "true":
		return true, true, nil
	case "false":
		return false, true, nil
	}
	return false, false, fmt.Errorf("member %q is not a boolean", name)
}

// obj reads a member that must be a JSON object when present; nil when absent
// or null.
func (o object) obj(name string) (json.RawMessage, error) {
	raw, ok := o.member(name)
	if !ok {
		return nil, nil
	}
	if raw[0] != '{' {
		return nil, fmt.Errorf("member %q is not an object", name)
	}
	return bytes.Clone(raw), nil
}

// decodeAgentList reads {"agents": [summary]}. A null list is an empty one;
// one bad summary spoils the list, since the node cannot tell what else the
// registry got wrong.
func decodeAgentList(data []byte) ([]Summary, error) {
	o, err := parseObject(data)
	if err != nil {
		return nil, fmt.Errorf("agent list: %w", err)
	}
	raw, present := o["agents"]
	if !present {
		return nil, errors.New(`agent list: member "agents" is missing`)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, errors.New(`agent list: member "agents" is not an array`)
	}
	list := make([]Summary, 0, len(items))
	for i, item := range items {
		s, err := decodeSummary(item)
		if err != nil {
			return nil, fmt.Errorf("agent list: agents[%d]: %w", i, err)
		}
		list = append(list, s)
	}
	return list, nil
}

// decodeSummary reads one registry agent summary.
func decodeSummary(data []byte) (Summary, error) {
	o, err := parseObject(data)
	if err != nil {
		return Summary{}, err
	}
	var s Summary
	if s.AgentID, err = o.id("agent_id", true); err != nil {
		return Summary{}, err
	}
	if s.Name, err = o.str("name", true); err != nil {
		return Summary{}, err
	}
	if s.Description, err = o.str("description", false); err != nil {
		return Summary{}, err
	}
	if s.RequiresPayment, _, err = o.boolean("requires_payment"); err != nil {
		return Summary{}, err
	}
	if s.RequiresOAuth, _, err = o.boolean("requires_oauth"); err != nil {
		return Summary{}, err
	}
	return s, nil
}

// decodeCard reads the card of agentID. A card naming another agent is
// refused: the node would otherwise price and authorise one agent by
// another's card.
//
// security_schemes: null is read as absent, like the other object members,
// since "no schemes" is the only thing null can mean there.
func decodeCard(data []byte, agentID string) (Card, error) {
	c, err := decodeCardMembers(data)
	if err != nil {
		return Card{}, fmt.Errorf("card: %w", err)
	}
	if c.AgentID != agentID {
		return Card{}, fmt.Errorf("card: agent_id %s differs from the agent asked, %s", quoteShort(c.AgentID), agentID)
	}
	return c, nil
}

func decodeCardMembers(data []byte) (Card, error) {
	o, err := parseObject(data)
	if err != nil {
		return Card{}, err
	}
	var c Card
	if c.AgentID, err = o.str("agent_id", true); err != nil {
		return Card{}, err
	}
	if c.Name, err = o.str("name", true); err != nil {
		return Card{}, err
	}
	if c.Description, err = o.str("description", false); err != nil {
		return Card{}, err
	}
	if c.InputSchema, err = o.obj("input_schema"); err != nil {
		return Card{}, err
	}
	if c.Pricing, err = o.obj("pricing"); err != nil {
		return Card{}, err
	}
	if c.SecuritySchemes, err = o.obj("security_schemes"); err != nil {
		return Card{}, err
	}
	paid, stated, err := o.boolean("requires_payment")
	if err != nil {
		return Card{}, err
	}
	c.RequiresPayment = paid || !stated && c.Pricing != nil
	c.RequiresOAuth = c.SecuritySchemes != nil
	return c, nil
}

// decodeInvoke reads an invoke answer: completed with an object result, or
// accepted with the receipt and task ids the node will poll and record.
func decodeInvoke(data []byte) (InvokeResponse, error) {
	r, err := decodeInvokeMembers(data)
	if err != nil {
		return InvokeResponse{}, fmt.Errorf("invoke answer: %w", err)
	}
	return r, nil
}

func decodeInvokeMembers(data []byte) (InvokeResponse, error) {
	o, err := parseObject(data)
	if err != nil {
		return InvokeResponse{}, err
	}
	var r InvokeResponse
	if r.Status, err = o.str("status", true); err != nil {
		return InvokeResponse{}, err
	}
	accepted := false
	switch r.Status {
	case StatusCompleted:
		if r.Result, err = o.obj("result"); err != nil {
			return InvokeResponse{}, err
		}
		if r.Result == nil {
			return InvokeResponse{}, errors.New(`completed without an object "result"`)
		}
	case StatusAccepted:
		accepted = true
	default:
		return InvokeResponse{}, fmt.Errorf("unknown status %s", quoteShort(r.Status))
	}
	if r.ReceiptID, err = o.id("receipt_id", accepted); err != nil {
		return InvokeResponse{}, err
	}
	if r.TaskID, err = o.id("task_id", accepted); err != nil {
		return InvokeResponse{}, err
	}
	return r, nil
}

// decodeTask reads task taskID. A task naming another id is refused: the node
// would record one task's outcome under another's receipt.
func decodeTask(data []byte, taskID string) (Task, error) {
	t, err := decodeTaskMembers(data)
	if err != nil {
		return Task{}, fmt.Errorf("task: %w", err)
	}
	if t.TaskID != taskID {
		return Task{}, fmt.Errorf("task: task_id %s differs from the task asked, %s", quoteShort(t.TaskID), taskID)
	}
	return t, nil
}

func decodeTaskMembers(data []byte) (Task, error) {
	o, err := parseObject(data)
	if err != nil {
		return Task{}, err
	}
	var t Task
	if t.TaskID, err = o.str("task_id", true); err != nil {
		return Task{}, err
	}
	if t.Status, err = o.str("status", true); err != nil {
		return Task{}, err
	}
	switch t.Status {
	case StatusRunning, StatusCompleted, StatusFailed:
	default:
		return Task{}, fmt.Errorf("unknown status %s", quoteShort(t.Status))
	}
	if t.Result, err = o.obj("result"); err != nil {
		return Task{}, err
	}
	if t.Status == StatusCompleted && t.Result == nil {
		return Task{}, errors.New(`completed without an object "result"`)
	}
	if t.Error, err = o.str("error", false); err != nil {
		return Task{}, err
	}
	return t, nil
}

// registryMessage is the human text of a registry's {"error": "..."} body,
// made safe to show: at most maxMessageRunes, control characters dropped, and
// the secrets of the call (the node credential, a client's OAuth token, a
// payment) blanked should the registry echo them. "" when there is none.
func registryMessage(body []byte, secrets []string) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	return safeText(e.Error, secrets)
}

// maxMessageRunes bounds a registry's text relayed in an error.
const maxMessageRunes = 300

func safeText(s string, secrets []string) string {
	for _, secret := range secrets {
		if secret != "" {
			s = strings.ReplaceAll(s, secret, "[redacted]")
		}
	}
	var b strings.Builder
	n := 0
	for _, r := range s {
		if unicode.IsControl(r) {
			r = ' '
		}
		if n == maxMessageRunes {
			b.WriteString("…")
			break
		}
		b.WriteRune(r)
		n++
	}
	return strings.TrimSpace(b.String())
}

// quoteShort quotes a value the registry sent, cut to a length fit for an
// error message.
func quoteShort(s string) string {
	const max = 64
	if len(s) > max {
		return strconv.Quote(s[:max]) + "…"
	}
	return strconv.Quote(s)
}
