package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestMCPBatchRateLimitBinary: through the real binary with a burst of 10, a
// JSON-RPC batch (MCP 2025-03-26) counts each message against the token's
// bucket, and one larger than the burst is refused whole
// (http.TestMCPBatchRateLimit holds the rest). The bucket refills one request
// every 20 s, so that no refill during the test can change its counts.
func TestMCPBatchRateLimitBinary(t *testing.T) {
	p := startProcess(t, t.TempDir(), "--rate-limit", "0.05", "--rate-burst", "10")
	post := func(body string) (int, string, http.Header) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, p.url+"/mcp", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+p.token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b), resp.Header
	}
	pings := func(n int) string {
		msgs := make([]string, n)
		for i := range msgs {
			msgs[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, i+1)
		}
		return "[" + strings.Join(msgs, ",") + "]"
	}
	initialize := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26",` +
		`"capabilities":{},"clientInfo":{"name":"old-client","version":"1"}}}`
	if status, body, _ := post(initialize); status != http.StatusOK || !strings.Contains(body, `"2025-03-26"`) {
		t.Fatalf("initialize: %d %s", status, body) // 1 of 10 spent
	}
	if status, body, _ := post(pings(11)); status != http.StatusRequestEntityTooLarge || !strings.Contains(body, `"batch_too_large"`) {
		t.Errorf("a batch of 11 with a burst of 10: %d %s", status, body) // 2 spent
	}
	status, body, h := post(pings(10)) // needs 10, 8 are left
	if status != http.StatusTooManyRequests || !strings.Contains(body, `"rate_limited"`) || h.Get("Retry-After") == "" {
		t.Errorf("a batch of 10 with 8 left: %d %s (Retry-After %q)", status, body, h.Get("Retry-After"))
	}
	status, body, _ = post(pings(7)) // 7 are left
	if status != http.StatusOK || strings.Count(body, `"result":{}`) != 7 {
		t.Errorf("a batch of 7 with 7 left: %d %s", status, body)
	}
	if status, body, _ := post(`{"jsonrpc":"2.0","id":1,"method":"ping"}`); status != http.StatusTooManyRequests {
		t.Errorf("a ping with the bucket spent: %d %s", status, body)
	}
}
