package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/civnode/civnode/commands/servicenet/servicenettest"
)

// TestRegistryTaskReadableByItsInvoker: a task is read through the node by
// the owner, and by an agent token acting for the identity that invoked it
// (after that token is rotated too); any other token, a task this node never
// issued, and a task asked under another agent are 404 task_not_found, and
// none of them reaches the registry.
func TestRegistryTaskReadableByItsInvoker(t *testing.T) {
	p, reg, dir := registryProcess(t, nil)
	reg.Add(servicenettest.Agent{ID: "slow", Async: &servicenettest.Async{Result: json.RawMessage(`{"secret":"owner's"}`)}})
	reg.Add(servicenettest.Agent{ID: "other", Async: &servicenettest.Async{}})
	addr := strings.TrimPrefix(p.url, "http://")
	for _, id := range []string{"alice", "bob"} {
		if status, code, b := apiPost(t, p, p.token, "/v1/civilization/bootstrap-identity",
			`{"display_name":"`+id+`","public_id":"`+id+`","faction":"order"}`); status != 200 {
			t.Fatalf("bootstrap %s: %d %s %s", id, status, code, b)
		}
	}
	_, alice, aliceID := tokenCLI(t, 0, "create", "--acts-for", "alice", "--data-dir", dir, "--addr", addr)
	_, bob, _ := tokenCLI(t, 0, "create", "--acts-for", "bob", "--data-dir", dir, "--addr", addr)
	_, observer, _ := tokenCLI(t, 0, "create", "--observer", "--data-dir", dir, "--addr", addr)

	invoke := func(token string) string {
		t.Helper()
		status, code, b := apiPost(t, p, token, "/v1/core/servicenet/agents/slow/invoke", `{"message":"go"}`)
		var r struct {
			Status string `json:"status"`
			TaskID string `json:"task_id"`
		}
		if json.Unmarshal(b, &r); status != 200 || r.Status != "accepted" || r.TaskID == "" {
			t.Fatalf("invoke: %d %s %s", status, code, b)
		}
		return r.TaskID
	}
	ownerTask, aliceTask := invoke(p.token), invoke(alice)
	get := func(token, agent, task string) (int, string, []byte) {
		t.Helper()
		return apiPost(t, p, token, "/v1/core/servicenet/agents/"+agent+"/tasks/"+task+"/get", `{}`)
	}

	for _, c := range []struct {
		name, token, agent, task string
		status                   int
		code                     string
	}{
		{"alice reads the owner's task", alice, "slow", ownerTask, 404, "task_not_found"},
		{"bob reads alice's task", bob, "slow", aliceTask, 404, "task_not_found"},
		{"alice reads a task the node never issued", alice, "slow", "task-999", 404, "task_not_found"},
		{"the owner reads a task the node never issued", p.token, "slow", "task-999", 404, "task_not_found"},
		{"the owner reads its task under another agent", p.token, "other", ownerTask, 404, "task_not_found"},
		{"an observer", observer, "slow", ownerTask, 403, "forbidden"},
	} {
		before := reg.Count(servicenettest.RouteTask, "")
		status, code, b := get(c.token, c.agent, c.task)
		if status != c.status || code != c.code {
			t.Errorf("%s: %d %s %s, want %d %s", c.name, status, code, b, c.status, c.code)
		}
		if strings.Contains(string(b), "owner's") {
			t.Errorf("%s: the answer holds the owner's result: %s", c.name, b)
		}
		if n := reg.Count(servicenettest.RouteTask, "") - before; n != 0 {
			t.Errorf("%s: the registry was asked %d times", c.name, n)
		}
	}

	for _, c := range []struct {
		name, token, task string
	}{
		{"the owner reads its task", p.token, ownerTask},
		{"alice reads her task", alice, aliceTask},
		{"the owner reads alice's task", p.token, aliceTask},
	} {
		if status, code, b := get(c.token, "slow", c.task); status != 200 || !strings.Contains(string(b), `"status":"completed"`) {
			t.Errorf("%s: %d %s %s", c.name, status, code, b)
		}
	}
	// The task belongs to the identity, not to one secret: a rotated token
	// acting for alice still reads it.
	_, alice2, _ := tokenCLI(t, 0, "rotate", aliceID, "--data-dir", dir, "--addr", addr)
	if status, code, b := get(alice2, "slow", aliceTask); status != 200 {
		t.Errorf("alice's rotated token reads her task: %d %s %s", status, code, b)
	}
	if n := reg.TaskPolls("slow", ownerTask); n != 1 {
		t.Errorf("the owner's task was polled %d times at the registry, want 1 (the owner's own read)", n)
	}
}
