package registrydev

import (
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// agent is one agent of the stand-in: its card and how it answers.
type agent struct {
	id, name, description string
	inputSchema           json.RawMessage
	securitySchemes       json.RawMessage
	price                 *Price
	oauth                 bool // needs an access token issued by /oauth/token
	async                 bool // accepts a task instead of answering at once
	answer                func(in invocation, now time.Time) (json.RawMessage, error)
}

// agents are the stand-in's four agents; base is the server's URL, under
// which the OAuth agent's endpoints are.
func agents(base string) []agent {
	schemes, _ := json.Marshal(map[string]any{"calendar-oauth": map[string]any{"type": "oauth2", "flows": map[string]any{
		"authorizationCode": map[string]any{
			"authorizationUrl": base + "/oauth/authorize", "tokenUrl": base + "/oauth/token", "refreshUrl": base + "/oauth/token",
			"scopes": map[string]string{"calendar.events": "Book events", "calendar.readonly": "Read the calendar"},
		}}}})
	return []agent{
		{id: "summarizer", name: "Summarizer", description: "Summarises a text in a few sentences.",
			inputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","minLength":1},` +
				`"sentences":{"type":"integer","minimum":1,"maximum":10}},"required":["text"],"additionalProperties":false}`),
			answer: summarize},
		{id: "deep-research", name: "Deep research", description: "Researches a question across sources; takes a while.",
			async: true, answer: research},
		{id: "market-data", name: "Market data", description: "Quotes for a symbol, paid per call in USDC on Base Sepolia.",
			inputSchema: json.RawMessage(`{"type":"object","properties":{"pair":{"type":"string","pattern":"^[A-Z]{2,10}/[A-Z]{2,10}$"}},"additionalProperties":false}`),
			price:       &Price{Version: 2, Amount: "10000", MaxTimeoutSeconds: 300}, answer: quote},
		{id: "calendar", name: "Calendar", description: "Reads and books the operator's calendar.",
			securitySchemes: schemes, oauth: true, answer: book},
	}
}

// cardJSON is the card as the registry sends it.
type cardJSON struct {
	AgentID         string            `json:"agent_id"`
	Name            string            `json:"name"`
	Description     string            `json:"description"`
	InputSchema     json.RawMessage   `json:"input_schema,omitempty"`
	SecuritySchemes json.RawMessage   `json:"security_schemes,omitempty"`
	Pricing         map[string]string `json:"pricing,omitempty"`
	RequiresPayment bool              `json:"requires_payment,omitempty"`
}

func (a *agent) card() cardJSON {
	c := cardJSON{AgentID: a.id, Name: a.name, Description: a.description, InputSchema: a.inputSchema,
		SecuritySchemes: a.securitySchemes}
	if a.price != nil {
		c.Pricing, c.RequiresPayment = a.price.Pricing(), true
	}
	return c
}

// summarize answers with the first sentences of the input's text (one by
// default).
func summarize(in invocation, _ time.Time) (json.RawMessage, error) {
	var args struct {
		Text      string `json:"text"`
		Sentences int    `json:"sentences"`
	}
	if err := json.Unmarshal(in.Input, &args); err != nil || args.Text == "" {
		return nil, errors.New("input must be {text, sentences} with a text")
	}
	if args.Sentences < 1 {
		args.Sentences = 1
	}
	var out []string
	rest := strings.TrimSpace(args.Text)
	for len(out) < args.Sentences && rest != "" {
		end := strings.IndexAny(rest, ".!?")
		if end < 0 {
			out, rest = append(out, rest), ""
			break
		}
		out, rest = append(out, rest[:end+1]), strings.TrimSpace(rest[end+1:])
	}
	return json.Marshal(map[string]string{"summary": strings.Join(out, " ")})
}

// research is the deep-research agent's report: a stand-in says so.
func research(in invocation, _ time.Time) (json.RawMessage, error) {
	return json.Marshal(map[string]any{"report": "registry-dev has no sources; it was asked: " + in.Message, "sources": 0})
}

// quote is a fixed quote: the stand-in knows no market.
func quote(in invocation, now time.Time) (json.RawMessage, error) {
	args := struct {
		Pair string `json:"pair"`
	}{Pair: "ETH/USD"}
	if len(in.Input) > 0 && string(in.Input) != "null" {
		if err := json.Unmarshal(in.Input, &args); err != nil {
			return nil, errors.New("input must be {pair}")
		}
	}
	return json.Marshal(map[string]string{"pair": args.Pair, "price": "3120.55", "at": now.UTC().Format(time.RFC3339),
		"source": "registry-dev, a fixed quote"})
}

// book books the first hour at 10:00 UTC after now.
func book(in invocation, now time.Time) (json.RawMessage, error) {
	at := time.Date(now.Year(), now.Month(), now.Day(), 10, 0, 0, 0, time.UTC)
	if !at.After(now) {
		at = at.AddDate(0, 0, 1)
	}
	return json.Marshal(map[string]string{"booked": at.Format(time.RFC3339), "request": in.Message})
}
