package registrydev

import (
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// agents are the stand-in's four agents; base is the server's URL, under
// which the OAuth agent's endpoints are.
func agents(base string) []Agent {
	schemes, _ := json.Marshal(map[string]any{"calendar-oauth": map[string]any{"type": "oauth2", "flows": map[string]any{
		"authorizationCode": map[string]any{
			"authorizationUrl": base + "/oauth/authorize", "tokenUrl": base + "/oauth/token", "refreshUrl": base + "/oauth/token",
			"scopes": map[string]string{"calendar.events": "Book events", "calendar.readonly": "Read the calendar"},
		}}}})
	return []Agent{
		{ID: "summarizer", Name: "Summarizer", Description: "Summarises a text in a few sentences.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","minLength":1},` +
				`"sentences":{"type":"integer","minimum":1,"maximum":10}},"required":["text"],"additionalProperties":false}`),
			Answer: summarize},
		{ID: "deep-research", Name: "Deep research", Description: "Researches a question across sources; takes a while.",
			Async: &Async{RunningPolls: 1}, Answer: research},
		{ID: "market-data", Name: "Market data", Description: "Quotes for a symbol, paid per call in USDC on Base Sepolia.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"pair":{"type":"string","pattern":"^[A-Z]{2,10}/[A-Z]{2,10}$"}},"additionalProperties":false}`),
			Price:       &Price{Version: 2, Amount: "10000", MaxTimeoutSeconds: 300}, Answer: quote},
		{ID: "calendar", Name: "Calendar", Description: "Reads and books the operator's calendar.",
			SecuritySchemes: schemes, OAuth: true, Answer: book},
	}
}

// summarize answers with the first sentences of the input's text (one by
// default).
func summarize(in Invocation, _ time.Time) (json.RawMessage, error) {
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
func research(in Invocation, _ time.Time) (json.RawMessage, error) {
	return json.Marshal(map[string]any{"report": "registry-dev has no sources; it was asked: " + in.Message, "sources": 0})
}

// quote is a fixed quote: the stand-in knows no market.
func quote(in Invocation, now time.Time) (json.RawMessage, error) {
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
func book(in Invocation, now time.Time) (json.RawMessage, error) {
	at := time.Date(now.Year(), now.Month(), now.Day(), 10, 0, 0, 0, time.UTC)
	if !at.After(now) {
		at = at.AddDate(0, 0, 1)
	}
	return json.Marshal(map[string]string{"booked": at.Format(time.RFC3339), "request": in.Message})
}
