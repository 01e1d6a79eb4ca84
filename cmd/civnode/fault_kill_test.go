package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/civnode/civnode/eventlog"
)

// TestFaultKillMixedLoad runs the real binary under mixed load — missions
// published, claimed, completed and settled, identities bootstrapped and
// bound, and a WebSocket client following /v1/stream — and SIGKILLs it at a
// random moment, -civnode.fault-rounds times on one data dir (so each round
// also recovers the crashes before it). After each kill, with the node down:
// verify --data-dir passes (and any torn tail it reports is the seq it
// verified), replay finds the kept read models equal to a fresh fold of the
// chain, every write answered 200 has its events in the chain, no half of a
// unit of events is there (a settle without its payment, a bootstrap without
// its profile), and every event the stream delivered is the chain's event at
// its seq. The restarted node then serves every acknowledged mission in at
// least its acknowledged state.
func TestFaultKillMixedLoad(t *testing.T) {
	rng := faultRand(t)
	dir := t.TempDir()
	var did, root string
	var prev []missionAck // missions acknowledged in the round before
	var totalAcks, torn int
	start := time.Now()
	for round := 1; round <= *faultRounds; round++ {
		roundStart := time.Now()
		p := startProcess(t, dir)
		var st stateBody
		getJSON(t, p.url+"/v1/state", p.token, http.StatusOK, &st)
		if round == 1 {
			did, root = st.Identity.NodeDID, st.Chain.RootHash
		}
		requireMissionStates(t, p, prev)

		killAfter := time.Duration(150+rng.IntN(1200)) * time.Millisecond
		load := runMixedLoad(t, p, round, st.Chain.Seq, killAfter)
		if code := p.wait(t); code != -1 {
			t.Fatalf("round %d: killed process exit code %d, want -1\nstderr:\n%s", round, code, p.stderr)
		}

		stdout, stderr, code := runSplit(t, nil, "verify", "--data-dir", dir)
		n := requireVerified(t, fmt.Sprintf("round %d: verify --data-dir after SIGKILL", round), stdout, code, did, root)
		if strings.Contains(stderr, "corrupt") {
			t.Fatalf("round %d: verify reported corruption after a crash:\n%s", round, stderr)
		}
		tornNote := ""
		if m := tornLine.FindStringSubmatch(stderr); m != nil {
			torn++
			tornNote = ", torn tail reported"
			if seq, _ := strconv.ParseUint(m[1], 10, 64); seq != n {
				t.Errorf("round %d: torn tail recovered to seq %s, verify counted %d events", round, m[1], n)
			}
		}
		out, code := runBinary(t, "replay", "--data-dir", dir)
		if code != 0 || !replayFoundNoDifference.MatchString(out) {
			t.Fatalf("round %d: replay after SIGKILL: exit %d, want the kept models equal to the rebuilt ones:\n%s", round, code, out)
		}
		load.requireInChain(t, dir, st.Chain.Seq)
		totalAcks += len(load.acks)
		prev = load.missions
		t.Logf("round %d: SIGKILL after %v: %d events acknowledged (%d missions), %d stream events, chain %d events%s (%v)",
			round, killAfter, len(load.acks), len(load.missions), len(load.streamed), n, tornNote, time.Since(roundStart).Round(time.Millisecond))
	}

	p := startProcess(t, dir)
	requireMissionStates(t, p, prev)
	p.signal(t, syscall.SIGTERM)
	if code := p.wait(t); code != 0 {
		t.Fatalf("SIGTERM: exit code %d\nstderr:\n%s", code, p.stderr)
	}
	out, code := runBinary(t, "verify", "--data-dir", dir)
	requireVerified(t, "verify --data-dir after SIGTERM", out, code, did, root)
	t.Logf("%d rounds: %d events acknowledged, none lost; %d torn tails reported (%v)",
		*faultRounds, totalAcks, torn, time.Since(start).Round(time.Millisecond))
}

// tornLine matches the torn-tail report that opening a crashed store logs.
var tornLine = regexp.MustCompile(`torn tail: the newest write of the last run was cut short and never acknowledged; recovered to seq ([0-9]+)`)

// chainAck is an event of a write answered 200: an event of type Type whose
// payload has Key as its mission_id, or else its agent_did, must be in the
// chain.
type chainAck struct{ Type, Key string }

// missionAck is a mission and the last state a write of it was answered in.
type missionAck struct{ ID, State string }

// mixedLoad is what one round's clients were answered and saw.
type mixedLoad struct {
	mu       sync.Mutex
	acks     []chainAck
	missions []missionAck
	streamed []streamedEvent
}

type streamedEvent struct {
	Seq uint64 `json:"seq"`
	ID  string `json:"id"`
}

func (l *mixedLoad) ack(acks ...chainAck) {
	l.mu.Lock()
	l.acks = append(l.acks, acks...)
	l.mu.Unlock()
}

// runMixedLoad runs 4 mission clients, 3 identity clients and a stream
// client against p, which it SIGKILLs after killAfter, and returns once every
// client has stopped. Before the kill every write must succeed.
func runMixedLoad(t *testing.T, p *process, round int, tip uint64, killAfter time.Duration) *mixedLoad {
	t.Helper()
	const missionClients, identityClients = 4, 3
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: missionClients + identityClients}}
	defer client.CloseIdleConnections()
	load := &mixedLoad{}
	var killed atomic.Bool
	var once sync.Once
	kill := func() {
		once.Do(func() {
			killed.Store(true)
			if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Errorf("SIGKILL: %v", err)
			}
		})
	}
	fail := func(err error) {
		if !killed.Load() {
			t.Errorf("round %d, before the kill: %v", round, err)
			kill()
		}
	}
	post := func(path string, body any) ([]byte, error) {
		b, _ := json.Marshal(body)
		return post2xx(client, p.url+path, p.token, b)
	}

	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	streamReady := make(chan struct{})
	wg.Go(func() { load.follow(ctx, t, p, tip, streamReady, fail) })
	<-streamReady
	for c := range identityClients {
		wg.Go(func() {
			for i := 0; !killed.Load(); i++ {
				publicID := fmt.Sprintf("r%d-i%d-%05d", round, c, i)
				ack, err := bootstrapOnce(client, p, publicID)
				if err != nil {
					fail(err)
					return
				}
				load.ack(chainAck{"identity.bootstrapped", ack.AgentDID}, chainAck{"profile.updated", ack.AgentDID})
			}
		})
	}
	for c := range missionClients {
		wg.Go(func() {
			slug := fmt.Sprintf("r%d-m%d", round, c)
			ack, err := bootstrapOnce(client, p, slug)
			if err != nil {
				fail(err)
				return
			}
			load.ack(chainAck{"identity.bootstrapped", ack.AgentDID}, chainAck{"profile.updated", ack.AgentDID})
			if _, err := post("/v1/civilization/controller-binding", map[string]any{"agent_did": ack.AgentDID,
				"controller_kind": "local_model", "controller_ref": slug}); err != nil {
				fail(err)
				return
			}
			load.ack(chainAck{"controller_binding.updated", ack.AgentDID})
			for i := 0; !killed.Load(); i++ {
				b, err := post("/v1/core/missions", map[string]any{"title": fmt.Sprintf("Survey %s-%d", slug, i),
					"description": "Survey the outer belt.", "publisher": "genesis", "publisher_kind": "planetary_government",
					"domain": "research", "subnet_id": "genesis",
					"reward": map[string]int{"agent_credit": 3, "reputation": 1, "capacity": 0, "treasury_share_credit": 1}})
				if err != nil {
					fail(err)
					return
				}
				var m struct {
					MissionID string `json:"mission_id"`
				}
				if err := json.Unmarshal(b, &m); err != nil || m.MissionID == "" {
					fail(fmt.Errorf("create mission: answer %s", b))
					return
				}
				load.ack(chainAck{"mission.created", m.MissionID})
				steps := []struct {
					path, state string
					body        any
					types       []string
				}{
					{"claim", "claimed", map[string]any{"claimer": slug}, []string{"mission.accepted"}},
					{"complete", "completed", map[string]any{"result": "surveyed"}, []string{"mission.completed"}},
					{"settle", "settled", map[string]any{}, []string{"mission.settled", "payment.settled"}},
				}
				state := "created"
				for _, s := range steps {
					if _, err := post("/v1/core/missions/"+m.MissionID+"/"+s.path, s.body); err != nil {
						fail(err)
						break
					}
					state = s.state
					for _, typ := range s.types {
						load.ack(chainAck{typ, m.MissionID})
					}
				}
				load.mu.Lock()
				load.missions = append(load.missions, missionAck{m.MissionID, state})
				load.mu.Unlock()
				if state != "settled" {
					return
				}
			}
		})
	}

	timer := time.AfterFunc(killAfter, kill)
	defer timer.Stop()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(killAfter + waitTimeout):
		kill()
		cancel()
		t.Fatalf("round %d: clients still running %v after the kill", round, waitTimeout)
	}
	if t.Failed() {
		t.FailNow()
	}
	return load
}

// follow reads /v1/stream from after seq tip until the connection ends,
// keeping each event's seq and id.
func (l *mixedLoad) follow(ctx context.Context, t *testing.T, p *process, tip uint64, ready chan<- struct{}, fail func(error)) {
	url := "ws" + strings.TrimPrefix(p.url, "http") + "/v1/stream?after_seq=" + strconv.FormatUint(tip, 10)
	dctx, cancel := context.WithTimeout(ctx, waitTimeout)
	c, _, err := websocket.Dial(dctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + p.token}}})
	cancel()
	close(ready)
	if err != nil {
		fail(fmt.Errorf("dial the stream: %w", err))
		return
	}
	defer c.CloseNow()
	c.SetReadLimit(-1)
	for {
		_, msg, err := c.Read(ctx)
		if err != nil {
			return // the kill ends the stream
		}
		var ev streamedEvent
		if err := json.Unmarshal(msg, &ev); err != nil {
			fail(fmt.Errorf("stream message %.200s: %w", msg, err))
			return
		}
		l.mu.Lock()
		l.streamed = append(l.streamed, ev)
		l.mu.Unlock()
	}
}

// requireInChain opens the chain of the stopped node in dir and requires
// that every acknowledged write has its event after seq from, that units of
// events are whole, and that the stream delivered the chain's events, in
// order, from seq from+1 on.
func (l *mixedLoad) requireInChain(t *testing.T, dir string, from uint64) {
	t.Helper()
	chain := openTestLog(t, dir)
	defer chain.Close()
	tip := chain.Tip().Seq
	type chainEvent struct {
		seq      uint64
		typ, key string
	}
	var evs []chainEvent
	err := chain.Scan(from+1, tip, func(ev *eventlog.Event) error {
		var p struct {
			MissionID string `json:"mission_id"`
			AgentDID  string `json:"agent_did"`
		}
		json.Unmarshal(ev.Payload, &p)
		key := p.MissionID
		if key == "" {
			key = p.AgentDID
		}
		evs = append(evs, chainEvent{ev.Seq, ev.Type, key})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Units of two events: the second follows the first at once.
	units := map[string]string{"mission.settled": "payment.settled", "identity.bootstrapped": "profile.updated"}
	found := map[chainAck]bool{}
	for i, e := range evs {
		found[chainAck{e.typ, e.key}] = true
		if second := units[e.typ]; second != "" && (i+1 == len(evs) || evs[i+1].typ != second || evs[i+1].key != e.key) {
			t.Fatalf("%s of %s at seq %d is not followed by its %s", e.typ, e.key, e.seq, second)
		}
	}
	for _, a := range l.acks {
		if !found[a] {
			t.Fatalf("acknowledged %s of %s is not in the chain (seqs %d..%d)", a.Type, a.Key, from+1, tip)
		}
	}
	for i, s := range l.streamed {
		if s.Seq != from+1+uint64(i) {
			t.Fatalf("stream event %d has seq %d, want %d (in order, none missing)", i, s.Seq, from+1+uint64(i))
		}
		ev, err := chain.Event(s.Seq)
		if err != nil || ev.ID != s.ID {
			t.Fatalf("the stream delivered seq %d id %s; the chain has %v (%v)", s.Seq, s.ID, ev, err)
		}
	}
}

// requireMissionStates requires that p serves each mission in at least the
// state its last acknowledged write left it in.
func requireMissionStates(t *testing.T, p *process, missions []missionAck) {
	t.Helper()
	rank := map[string]int{"created": 0, "claimed": 1, "completed": 2, "settled": 3}
	for _, m := range missions {
		var got struct {
			State string `json:"state"`
		}
		getJSON(t, p.url+"/v1/core/missions/"+m.ID, p.token, http.StatusOK, &got)
		if r, ok := rank[got.State]; !ok || r < rank[m.State] {
			t.Fatalf("mission %s is %q after the restart, acknowledged %q", m.ID, got.State, m.State)
		}
	}
}
