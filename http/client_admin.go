package http

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/civnode/civnode/commands"
)

// adminResponseLimit bounds what is read of an answer; a token or account
// list is small.
const adminResponseLimit = 16 << 20

// Call sends one admin request and decodes a 200 answer into out. A refusal
// the node explains (400, 403, 404, 409) comes back as the same
// *commands.Error the commands return on a stopped node's data dir, so both
// print alike.
func (c *Client) Call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode admin request: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := c.NewRequest(ctx, method, path, body)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		// The error names the URL, never the header that holds the token.
		return fmt.Errorf("admin request to the node at %s: %w", c.Via, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, adminResponseLimit))
	if err != nil {
		return fmt.Errorf("read answer of the node at %s: %w", c.Via, err)
	}
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("decode answer of the node at %s: %w", c.Via, err)
		}
		return nil
	}
	var e struct {
		Error string `json:"error"`
		Code  string `json:"code"`
		Field string `json:"field"`
	}
	if json.Unmarshal(raw, &e) != nil || e.Code == "" {
		return fmt.Errorf("the node at %s answered %s %s with %s", c.Via, method, path, resp.Status)
	}
	kind, explained := map[int]commands.Kind{
		http.StatusBadRequest: commands.KindInvalid,
		http.StatusForbidden:  commands.KindForbidden,
		http.StatusNotFound:   commands.KindNotFound,
		http.StatusConflict:   commands.KindConflict,
	}[resp.StatusCode]
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		// The node proved it is the data dir's own, so the file and the token
		// the node holds differ.
		return fmt.Errorf("the node at %s refused the owner token in control.token; was the file changed after the node started? Restart the node to use it", c.Via)
	case resp.StatusCode == http.StatusNotFound && e.Code == "not_found":
		return fmt.Errorf("the node at %s has no admin endpoints (%s)", c.Via, e.Error)
	case explained:
		return &commands.Error{Kind: kind, Code: e.Code, Field: e.Field, Message: e.Error}
	}
	return fmt.Errorf("the node at %s answered %s: %s (%s)", c.Via, resp.Status, e.Error, e.Code)
}
