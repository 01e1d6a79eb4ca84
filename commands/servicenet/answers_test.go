package servicenet

import (
	"encoding/json"
	"testing"
)

// Fuzz targets of the answer decoders (house style: every decoder). Each
// holds that an accepted answer keeps the promises the rest of the node
// relies on; the table tests of client_test.go hold the refusals.

func FuzzClientDecodeAgentList(f *testing.F) {
	for _, s := range []string{
		`{"agents":[{"agent_id":"a1","name":"A","requires_payment":true}]}`,
		`{"agents":null}`, `{"agents":[{}]}`, `{"agents":[null]}`, `{}`, `[]`, `"x"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		list, err := decodeAgentList(data)
		if err != nil {
			return
		}
		if list == nil {
			t.Fatal("accepted list is nil, would encode as null")
		}
		for _, s := range list {
			if !ValidID(s.AgentID) {
				t.Fatalf("summary with id %q accepted", s.AgentID)
			}
		}
	})
}

func FuzzClientDecodeInvoke(f *testing.F) {
	for _, s := range []string{
		`{"status":"completed","result":{"a":1}}`,
		`{"status":"accepted","receipt_id":"r1","task_id":"t1"}`,
		`{"status":"accepted","receipt_id":"r1"}`, `{"status":"completed","result":null}`, `{"status":"failed"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := decodeInvoke(data)
		if err != nil {
			return
		}
		switch r.Status {
		case StatusCompleted:
			var m map[string]any
			if json.Unmarshal(r.Result, &m) != nil || m == nil {
				t.Fatalf("completed with result %s", r.Result)
			}
		case StatusAccepted:
			if !ValidID(r.ReceiptID) || !ValidID(r.TaskID) {
				t.Fatalf("accepted with ids %q, %q", r.ReceiptID, r.TaskID)
			}
		default:
			t.Fatalf("status %q accepted", r.Status)
		}
	})
}

func FuzzClientDecodeTask(f *testing.F) {
	for _, s := range []string{
		`{"task_id":"t1","status":"running"}`,
		`{"task_id":"t1","status":"completed","result":{}}`,
		`{"task_id":"t1","status":"failed","error":"boom"}`,
		`{"task_id":"t2","status":"running"}`, `{"task_id":"t1","status":"completed"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		task, err := decodeTask(data, "t1")
		if err != nil {
			return
		}
		if task.TaskID != "t1" {
			t.Fatalf("task %q accepted for t1", task.TaskID)
		}
		if task.Status != StatusRunning && !task.Terminal() {
			t.Fatalf("status %q accepted", task.Status)
		}
		if task.Status == StatusCompleted && len(task.Result) == 0 {
			t.Fatal("completed task without result accepted")
		}
	})
}
