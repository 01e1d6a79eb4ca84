package oraclesock

import (
	"bytes"
	"encoding/json"
	"time"
)

// Bounds of the socket.
const (
	// RequestLimit bounds one request line; a feed payload is at most 64 KiB,
	// so a request is far smaller.
	RequestLimit = 1 << 20
	// ResponseLimit bounds what the client reads of one answer: the balances
	// of every identity can be long.
	ResponseLimit = 64 << 20
	// RequestTimeout bounds one request on the node.
	RequestTimeout = 30 * time.Second
	// IdleTimeout closes a connection that sends no request.
	IdleTimeout = 2 * time.Minute
	// WriteTimeout bounds the write of one answer.
	WriteTimeout = 10 * time.Second
	// MaxConns bounds the connections served at once; more wait to be
	// accepted.
	MaxConns = 64
)

// Operations of the socket.
const (
	opPublish   = "publish"
	opSubscribe = "subscribe"
	opPull      = "pull"
	opBalance   = "balance"
	opFeeds     = "feeds"
)

// Request is one request line.
type Request struct {
	Op   string          `json:"op"`
	Args json.RawMessage `json:"args,omitempty"`
}

// Response is one response line: Result or Error.
type Response struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  *Failure        `json:"error,omitempty"`
}

// Failure is a failed request, and what civnode oracle --json prints for a
// failed command (the CLI adds kind failed for its own errors). Kind and its
// meaning are in the package doc.
type Failure struct {
	Kind    string `json:"kind"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

// Arguments and results of the socket that are not the commands' own types.
type (
	// BalanceArgs are the args of balance: one identity, or every one.
	BalanceArgs struct {
		Agent string `json:"agent,omitempty"`
	}
	// BalanceList is the result of balance.
	BalanceList struct {
		Balances []Balance `json:"balances"`
	}
	// FeedList is the result of feeds.
	FeedList struct {
		Feeds []Feed `json:"feeds"`
	}
)

// Marshal is json.Marshal without HTML escaping, the encoding of every line:
// a feed's payload is shown, and carried over the socket, in the very bytes
// its signature covers (RFC 8785 does not escape <, > or &), not in an equal
// JSON value spelt with \u003c.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
