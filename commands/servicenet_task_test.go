package commands_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/commands/servicenet"
	"github.com/civnode/civnode/commands/servicenet/servicenettest"
	"github.com/civnode/civnode/eventlog/events"
)

func TestServicenetAsyncInvoke(t *testing.T) {
	n := newSNNode(t, snConfig{})
	n.reg.Add(servicenettest.Agent{ID: "slow", Async: &servicenettest.Async{RunningPolls: 1, Result: json.RawMessage(`{"b":2,"a":1}`)}})
	tip := n.log.Tip().Seq

	res, err := n.invoke("slow", `{"x":true}`)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "accepted" || res.ReceiptID == "" || res.TaskID == "" || res.Result != nil {
		t.Fatalf("result = %+v", res)
	}
	if b, _ := json.Marshal(res.Body()); string(b) != `{"status":"accepted","receipt_id":"`+res.ReceiptID+`","task_id":"`+res.TaskID+`"}` {
		t.Errorf("body = %s", b)
	}
	evs := n.events(tip)
	if len(evs) != 1 {
		t.Fatalf("events = %v", n.types(tip))
	}
	inv := payloadOf[events.ServicenetInvoked](t, evs[0])
	want := events.ServicenetInvoked{AgentID: "slow", InvokedBy: n.log.NodeDID(), TokenID: "owner",
		RequestSHA256: canonicalSHA256(t, `{"input":{"x":true},"message":"hello"}`), Status: "accepted",
		ReceiptID: &res.ReceiptID, TaskID: &res.TaskID}
	if !reflect.DeepEqual(inv, want) {
		t.Errorf("servicenet.invoked = %+v\nwant %+v", inv, want)
	}
	tip = n.log.Tip().Seq

	// The first poll finds it running: nothing recorded.
	rt, err := n.sn.Receipt(context.Background(), owner, res.ReceiptID)
	if err != nil {
		t.Fatal(err)
	}
	if rt.ReceiptID != res.ReceiptID || rt.AgentID != "slow" || rt.TaskID != res.TaskID || rt.Status != "running" {
		t.Errorf("receipt = %+v", rt)
	}
	if n.log.Tip().Seq != tip {
		t.Errorf("a running task recorded %v", n.types(tip))
	}
	// Then completed, recorded once however often it is fetched.
	for range 3 {
		task, err := n.sn.Task(context.Background(), owner, "slow", res.TaskID)
		if err != nil {
			t.Fatal(err)
		}
		if task.Status != "completed" || string(task.Result) != `{"b":2,"a":1}` {
			t.Errorf("task = %+v", task)
		}
	}
	got := n.events(tip)
	if len(got) != 1 || got[0].Type != events.TypeServicenetTaskCompleted {
		t.Fatalf("events = %v, want one servicenet.task.completed", n.types(tip))
	}
	sum := canonicalSHA256(t, `{"a":1,"b":2}`)
	if fin := payloadOf[events.ServicenetTaskFinished](t, got[0]); !reflect.DeepEqual(fin, events.ServicenetTaskFinished{
		AgentID: "slow", TaskID: res.TaskID, ReceiptID: res.ReceiptID, ResultSHA256: &sum}) {
		t.Errorf("servicenet.task.completed = %+v", fin)
	}
	rc, ok, err := n.core.Receipts.Receipt(res.ReceiptID)
	if err != nil || !ok || rc.Status != "completed" || rc.ResultSHA256 == nil || *rc.ResultSHA256 != sum || rc.FinishedAt == nil {
		t.Errorf("model receipt = %+v %v %v", rc, ok, err)
	}

	// A task this node did not invoke is 404 and never asked of the
	// registry, whatever the registry would answer.
	tip = n.log.Tip().Seq
	n.reg.Add(servicenettest.Agent{ID: "stranger", TaskFault: &servicenettest.Fault{Status: 200,
		Body: []byte(`{"task_id":"t-strange","status":"completed","result":{}}`)}})
	_, err = n.sn.Task(context.Background(), owner, "stranger", "t-strange")
	n.refused(err, tip, commands.KindNotFound, "task_not_found", "task_id")
	if polls := n.reg.Count(servicenettest.RouteTask, "stranger"); polls != 0 {
		t.Errorf("a task of no receipt was asked of the registry %d times", polls)
	}

	// Receipts: unknown → 404; an agent token sees only its own.
	_, err = n.sn.Receipt(context.Background(), owner, "rcpt-none")
	n.refused(err, tip, commands.KindNotFound, "receipt_not_found", "receipt_id")
	_, err = n.sn.Receipt(context.Background(), agentActor("did:key:z6MkOther"), res.ReceiptID)
	n.refused(err, tip, commands.KindNotFound, "receipt_not_found", "receipt_id")
	mine, err := n.sn.Invoke(context.Background(), agentActor("did:key:z6MkMine"), "slow", commands.InvokeInput{Message: ptr("x")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.sn.Receipt(context.Background(), agentActor("did:key:z6MkMine"), mine.ReceiptID); err != nil {
		t.Errorf("an agent's own receipt: %v", err)
	}
}

// TestServicenetTaskReadableByItsInvoker: an agent token reads the tasks
// invoked for its identity, by any of its tokens; the owner reads every
// task; another agent, a task under another agent's id and a task this node
// never issued are 404 task_not_found, and the registry is not asked.
func TestServicenetTaskReadableByItsInvoker(t *testing.T) {
	n := newSNNode(t, snConfig{})
	n.reg.Add(servicenettest.Agent{ID: "a", Async: &servicenettest.Async{}})
	n.reg.Add(servicenettest.Agent{ID: "b", Async: &servicenettest.Async{}})
	mine := agentActor("did:key:z6MkMine")
	ownerRes, err := n.invoke("a", "")
	if err != nil {
		t.Fatal(err)
	}
	mineRes, err := n.sn.Invoke(context.Background(), mine, "a", commands.InvokeInput{Message: ptr("x")})
	if err != nil {
		t.Fatal(err)
	}
	rotated := mine
	rotated.TokenID = "another-token-of-mine"
	tip := n.log.Tip().Seq
	for _, c := range []struct {
		name   string
		a      commands.Actor
		agent  string
		taskID string
	}{
		{"an agent reads the owner's task", mine, "a", ownerRes.TaskID},
		{"another agent reads mine", agentActor("did:key:z6MkOther"), "a", mineRes.TaskID},
		{"a task never issued", mine, "a", "task-999"},
		{"the owner, a task never issued", owner, "a", "task-999"},
		{"the owner, its task under another agent", owner, "b", ownerRes.TaskID},
	} {
		_, err := n.sn.Task(context.Background(), c.a, c.agent, c.taskID)
		n.refused(err, tip, commands.KindNotFound, "task_not_found", "task_id")
	}
	if polls := n.reg.Count(servicenettest.RouteTask, ""); polls != 0 {
		t.Errorf("refused reads asked the registry %d times", polls)
	}
	for _, c := range []struct {
		name   string
		a      commands.Actor
		taskID string
	}{
		{"the owner, its task", owner, ownerRes.TaskID},
		{"the owner, the agent's task", owner, mineRes.TaskID},
		{"the agent, its task", mine, mineRes.TaskID},
		{"another token of the same identity", rotated, mineRes.TaskID},
	} {
		if task, err := n.sn.Task(context.Background(), c.a, "a", c.taskID); err != nil || task.Status != "completed" {
			t.Errorf("%s: %+v, %v", c.name, task, err)
		}
	}
}

// TestServicenetTaskEndRecordedOnce: concurrent fetches of a finished task
// record its end once.
func TestServicenetTaskEndRecordedOnce(t *testing.T) {
	n := newSNNode(t, snConfig{})
	n.reg.Add(servicenettest.Agent{ID: "a", Async: &servicenettest.Async{}})
	res, err := n.invoke("a", "")
	if err != nil {
		t.Fatal(err)
	}
	tip := n.log.Tip().Seq
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() {
			var err error
			if i%2 == 0 {
				_, err = n.sn.Task(context.Background(), owner, "a", res.TaskID)
			} else {
				_, err = n.sn.Receipt(context.Background(), owner, res.ReceiptID)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if got := n.types(tip); len(got) != 1 || got[0] != events.TypeServicenetTaskCompleted {
		t.Errorf("events = %v, want one servicenet.task.completed", got)
	}
	if polls := n.reg.TaskPolls("a", res.TaskID); polls != 16 {
		t.Errorf("polls = %d", polls)
	}
}

func TestServicenetTaskFailed(t *testing.T) {
	n := newSNNode(t, snConfig{})
	long := strings.Repeat("é", 600) // 1200 bytes: cut to 1024 on a rune boundary
	n.reg.Add(servicenettest.Agent{ID: "a", Async: &servicenettest.Async{Error: "quota exceeded"}})
	n.reg.Add(servicenettest.Agent{ID: "b", Async: &servicenettest.Async{Error: long}})
	for _, c := range []struct{ agent, wantErr string }{{"a", "quota exceeded"}, {"b", strings.Repeat("é", 512)}} {
		res, err := n.invoke(c.agent, "")
		if err != nil {
			t.Fatal(err)
		}
		tip := n.log.Tip().Seq
		for range 2 {
			task, err := n.sn.Task(context.Background(), owner, c.agent, res.TaskID)
			if err != nil {
				t.Fatal(err)
			}
			if task.Status != "failed" || task.Error == "" || task.Result != nil {
				t.Errorf("task = %+v", task)
			}
		}
		evs := n.events(tip)
		if len(evs) != 1 || evs[0].Type != events.TypeServicenetTaskFailed {
			t.Fatalf("events = %v", n.types(tip))
		}
		fin := payloadOf[events.ServicenetTaskFinished](t, evs[0])
		if fin.Error == nil || *fin.Error != c.wantErr || fin.ResultSHA256 != nil || fin.ReceiptID != res.ReceiptID {
			t.Errorf("servicenet.task.failed = %+v", fin)
		}
	}
}

func TestServicenetInvokeAndWait(t *testing.T) {
	n := newSNNode(t, snConfig{})
	n.reg.Add(servicenettest.Agent{ID: "slow", Async: &servicenettest.Async{RunningPolls: 3, Result: json.RawMessage(`{"done":true}`)}})
	n.reg.Add(servicenettest.Agent{ID: "stuck", Async: &servicenettest.Async{RunningPolls: 1 << 30}})
	n.reg.Add(servicenettest.Agent{ID: "quick"})
	tip := n.log.Tip().Seq

	w, err := n.sn.InvokeAndWait(context.Background(), owner, "slow", commands.InvokeInput{Message: ptr("go")}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if w.Task == nil || w.Task.Status != "completed" || string(w.Task.Result) != `{"done":true}` || w.AgentID != "slow" {
		t.Fatalf("wait = %+v", w)
	}
	if polls := n.reg.TaskPolls("slow", w.Invoke.TaskID); polls != 4 {
		t.Errorf("polls = %d, want 4", polls)
	}
	if got := n.types(tip); strings.Join(got, " ") != "servicenet.invoked servicenet.task.completed" {
		t.Errorf("events = %v", got)
	}
	b, _ := json.Marshal(w.Body())
	if string(b) != `{"receipt_id":"`+w.Invoke.ReceiptID+`","agent_id":"slow","task_id":"`+w.Invoke.TaskID+`","status":"completed","result":{"done":true}}` {
		t.Errorf("body = %s", b)
	}

	// The wait runs out: the task as it stands, with its receipt.
	tip = n.log.Tip().Seq
	start := time.Now()
	w, err = n.sn.InvokeAndWait(context.Background(), owner, "stuck", commands.InvokeInput{Message: ptr("go")}, 60*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the wait of 60ms took %v", d)
	}
	if w.Task == nil || w.Task.Status != servicenet.StatusRunning || w.Invoke.ReceiptID == "" {
		t.Fatalf("wait = %+v", w)
	}
	if got := n.types(tip); strings.Join(got, " ") != "servicenet.invoked" {
		t.Errorf("events = %v", got)
	}
	if polls := n.reg.TaskPolls("stuck", w.Invoke.TaskID); polls < 2 {
		t.Errorf("polled %d times in the wait", polls)
	}

	// A synchronous agent answers at once.
	w, err = n.sn.InvokeAndWait(context.Background(), owner, "quick", commands.InvokeInput{Message: ptr("go")}, time.Second)
	if err != nil || w.Task != nil || w.Invoke.Status != "completed" {
		t.Fatalf("wait = %+v, %v", w, err)
	}

	// A caller whose time runs out stops polling at once, and still gets the
	// receipt of the invocation it made, not an error it would answer by
	// invoking (and paying) again.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	start = time.Now()
	w, err = n.sn.InvokeAndWait(ctx, owner, "stuck", commands.InvokeInput{Message: ptr("go")}, time.Minute)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("InvokeAndWait outlived its context by %v", d)
	}
	if err != nil || w.Task == nil || w.Task.Status != servicenet.StatusRunning || w.Invoke.ReceiptID == "" {
		t.Errorf("after the caller's deadline: wait = %+v, %v; want the running task with its receipt", w, err)
	}
}

// TestServicenetReceiptAfterRestart: a receipt is in the chain, so it
// resolves after the node restarts, and its end is then recorded once.
func TestServicenetReceiptAfterRestart(t *testing.T) {
	n := newSNNode(t, snConfig{onDisk: true})
	n.reg.Add(servicenettest.Agent{ID: "slow", Async: &servicenettest.Async{RunningPolls: 1}})
	res, err := n.invoke("slow", "")
	if err != nil {
		t.Fatal(err)
	}
	n.restart()
	rt, err := n.sn.Receipt(context.Background(), owner, res.ReceiptID)
	if err != nil {
		t.Fatal(err)
	}
	if rt.Status != "running" || rt.AgentID != "slow" || rt.TaskID != res.TaskID {
		t.Errorf("receipt after restart = %+v", rt)
	}
	if rt, err = n.sn.Receipt(context.Background(), owner, res.ReceiptID); err != nil || rt.Status != "completed" {
		t.Fatalf("receipt = %+v, %v", rt, err)
	}
	n.restart()
	if rt, err = n.sn.Receipt(context.Background(), owner, res.ReceiptID); err != nil || rt.Status != "completed" {
		t.Fatalf("receipt = %+v, %v", rt, err)
	}
	if got := len(n.ofType(0, events.TypeServicenetTaskCompleted)); got != 1 {
		t.Errorf("task.completed events = %d, want 1 across restarts", got)
	}
	rc, ok, err := n.core.Receipts.Receipt(res.ReceiptID)
	if err != nil || !ok || rc.Status != "completed" {
		t.Errorf("model receipt = %+v %v %v", rc, ok, err)
	}
	// A rebuild of the models from the chain finds the same state.
	diff, err := n.log.RebuildModels(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !diff.Same() {
		t.Errorf("the live models differ from a rebuild: %+v", diff)
	}
}

// TestServicenetWaitSurvivesPollFailures: once the registry has accepted (and
// perhaps been paid), a failed poll must not turn the call into an error the
// caller would answer by invoking again: the wait ends with the task as last
// seen and the receipt to go on polling with.
func TestServicenetWaitSurvivesPollFailures(t *testing.T) {
	n := newSNNode(t, snConfig{retries: 1})
	n.reg.Add(servicenettest.Agent{ID: "flaky", Async: &servicenettest.Async{}, TaskFault: &servicenettest.Fault{Status: 503}})
	w, err := n.sn.InvokeAndWait(context.Background(), owner, "flaky", commands.InvokeInput{Message: ptr("go")}, time.Second)
	if err != nil {
		t.Fatalf("InvokeAndWait: %v", err)
	}
	if w.Task == nil || w.Task.Status != servicenet.StatusRunning || w.Invoke.ReceiptID == "" || w.Invoke.TaskID != w.Task.TaskID {
		t.Fatalf("wait = %+v", w)
	}
	// The registry recovers: the receipt finishes the job.
	n.reg.Update("flaky", func(a *servicenettest.Agent) { a.TaskFault = nil })
	rt, err := n.sn.Receipt(context.Background(), owner, w.Invoke.ReceiptID)
	if err != nil || rt.Status != "completed" {
		t.Fatalf("receipt = %+v, %v", rt, err)
	}
}
