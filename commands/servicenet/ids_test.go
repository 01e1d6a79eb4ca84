package servicenet

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"path"
	"strings"
	"testing"
)

func TestValidID(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want bool
	}{
		{"a", true},
		{"agent-1", true},
		{"urn:agent:weather.v2_beta", true},
		{"...", true},
		{".a", true},
		{strings.Repeat("x", 128), true},
		{"", false},
		{".", false},
		{"..", false},
		{strings.Repeat("x", 129), false},
		{"../x", false},
		{"a/b", false},
		{"a?b", false},
		{"a#b", false},
		{"%2e%2e", false},
		{" ", false},
		{"a b", false},
		{"a\nb", false},
		{"agént", false},
		{"代理", false},
		{"a\x00", false},
		{"a\\b", false},
		{"a;b", false},
		{"a@b", false},
	} {
		if got := ValidID(tc.id); got != tc.want {
			t.Errorf("ValidID(%q) = %v, want %v", tc.id, got, tc.want)
		}
	}
}

// badIDs are ids that must never reach the registry.
var badIDs = []string{"../x", "a/b", "a?b", "%2e%2e", "a#b", " ", "", ".", "..", strings.Repeat("a", 129), "agént", "代理", "a\r\nX-Evil: 1"}

func TestClientRefusesInvalidIDsBeforeCallingTheRegistry(t *testing.T) {
	f := newFakeRegistry(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		t.Errorf("registry reached with %s %s", r.Method, r.URL.EscapedPath())
		writeJSON(w, 500, `{}`)
	})
	c, _ := newTestClient(t, testConfig(f))
	ctx := context.Background()
	check := func(t *testing.T, err error, field, id string) {
		t.Helper()
		if !errors.Is(err, ErrInvalidID) {
			t.Fatalf("err = %v, want ErrInvalidID", err)
		}
		var ie *InvalidIDError
		if !errors.As(err, &ie) || ie.Field != field || ie.ID != id {
			t.Fatalf("err = %#v, want InvalidIDError{%s, %q}", err, field, id)
		}
		if !strings.Contains(err.Error(), field) {
			t.Errorf("message %q does not name %s", err, field)
		}
	}
	for _, id := range badIDs {
		_, err := c.Card(ctx, id)
		check(t, err, "agent_id", id)
		_, err = c.Invoke(ctx, id, InvokeRequest{Message: "hi"}, nil)
		check(t, err, "agent_id", id)
		_, err = c.GetTask(ctx, id, "t1")
		check(t, err, "agent_id", id)
		_, err = c.GetTask(ctx, "a1", id)
		check(t, err, "task_id", id)
	}
	if n := f.count(); n != 0 {
		t.Fatalf("registry received %d requests", n)
	}
}

func TestClientValidIDReachesExactlyItsPath(t *testing.T) {
	const agent, task = "urn:agent:weather.v2", "task:9.1-a_b"
	f := newFakeRegistry(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/get"):
			writeJSON(w, 200, `{"task_id":"`+task+`","status":"running"}`)
		case strings.HasSuffix(r.URL.Path, "/invoke"):
			writeJSON(w, 200, `{"status":"completed","result":{}}`)
		default:
			writeJSON(w, 200, `{"agent_id":"`+agent+`","name":"Weather"}`)
		}
	})
	for _, prefix := range []string{"", "/registry/v2", "/registry/v2/"} {
		cfg := testConfig(f)
		cfg.BaseURL = f.srv.URL + prefix
		c, _ := newTestClient(t, cfg)
		ctx := context.Background()
		if _, err := c.Card(ctx, agent); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Invoke(ctx, agent, InvokeRequest{Message: "m"}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := c.GetTask(ctx, agent, task); err != nil {
			t.Fatal(err)
		}
		base := strings.TrimSuffix(prefix, "/")
		want := []string{
			"GET " + base + "/v1/agents/" + agent,
			"POST " + base + "/v1/agents/" + agent + "/invoke",
			"POST " + base + "/v1/agents/" + agent + "/tasks/" + task + "/get",
		}
		got := f.seen()[len(f.seen())-3:]
		for i, r := range got {
			if r.Method+" "+r.Path != want[i] {
				t.Errorf("prefix %q: request %d = %s %s, want %s", prefix, i, r.Method, r.Path, want[i])
			}
		}
	}
}

// FuzzValidID holds that an id ValidID accepts is one path segment that
// escaping leaves alone and path cleaning cannot move.
func FuzzValidID(f *testing.F) {
	for _, s := range append(badIDs, "a", "urn:x:y", "...", "a.b") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if !ValidID(id) {
			return
		}
		if url.PathEscape(id) != id {
			t.Fatalf("ValidID(%q) but PathEscape changes it", id)
		}
		p := "/v1/agents/" + id + "/invoke"
		if path.Clean(p) != p {
			t.Fatalf("ValidID(%q) but %s cleans to %s", id, p, path.Clean(p))
		}
		u, err := url.Parse("https://registry.example" + p)
		if err != nil || u.Host != "registry.example" || u.EscapedPath() != p || u.RawQuery != "" || u.Fragment != "" {
			t.Fatalf("ValidID(%q) but the URL parses as %#v, %v", id, u, err)
		}
	})
}
