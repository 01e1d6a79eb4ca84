package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

var (
	linearLong = flag.Bool("civnode.linear.long", false,
		"TestLinearizableUnderKill: 20 SIGKILL rounds and 4 groups of 3 clients instead of 3 rounds and 2 groups of 2")
	linearSeed = flag.Uint64("civnode.linear.seed", 0,
		"TestLinearizableUnderKill: seed of the kill times and the clients' choices; 0 picks one")
	linearHTML = flag.String("civnode.linear.html", "",
		"TestLinearizableUnderKill: write the porcupine visualisation to this file even when the history is linearizable")
)

// linConfig sizes TestLinearizableUnderKill.
type linConfig struct {
	kills        int           // SIGKILL rounds; a last start reads everything back
	groups       int           // porcupine partitions
	clients      int           // concurrent clients per group
	identities   int           // claimers per group, at most linIdentities
	minRound     time.Duration // the node is killed this long after it listens, at the least…
	maxRound     time.Duration // …and at the most
	checkTimeout time.Duration // bound on porcupine's search
}

var (
	linShort = linConfig{kills: 3, groups: 2, clients: 2, identities: 2,
		minRound: 400 * time.Millisecond, maxRound: 1200 * time.Millisecond, checkTimeout: 2 * time.Minute}
	linLong = linConfig{kills: 20, groups: 4, clients: 3, identities: 3,
		minRound: time.Second, maxRound: 4 * time.Second, checkTimeout: 10 * time.Minute}
)

// TestLinearizableUnderKill checks the mission state machine and the balances
// the way etcd's robustness tests check etcd. Clients create, claim, complete
// and settle missions and read missions and balances over HTTP against a real
// civnode serve, which is SIGKILLed at a seeded random time and restarted on
// the same data dir, round after round; a last start reads every mission and
// balance back. Every operation is recorded with its call and return times,
// and porcupine must find the whole history linearizable against the
// sequential model of linear_model_test.go. A write whose connection broke
// when the node died may or may not have taken effect; it is recorded with no
// return, and the model allows both. A history that is not linearizable fails
// the test and its visualisation is written to $TMPDIR/civnode-linear-<seed>.html.
//
// A claim, complete or settle must answer with the record as its own step
// left it, never a later step that committed before the answer was read
// (http.Server.writtenMission): the model holds each write to its own result.
func TestLinearizableUnderKill(t *testing.T) {
	cfg := linShort
	if *linearLong {
		cfg = linLong
	}
	seed := *linearSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d: rerun with -civnode.linear.seed=%d", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	dir := t.TempDir()
	w := newLinWorld(cfg, seed)

	p := startProcess(t, dir)
	w.setup(t, p)
	for round := 1; round <= cfg.kills; round++ {
		began := time.Now()
		if round > 1 {
			p = w.start(t, dir, round)
		} else {
			w.up(round)
		}
		started := time.Since(began)
		after := cfg.minRound + time.Duration(rng.Int64N(int64(cfg.maxRound-cfg.minRound)+1))
		before := w.counts()
		w.round(t, p, round, after, rng.Uint64())
		if code := p.wait(t); code != -1 {
			t.Fatalf("round %d: killed node exit code %d, want -1 (signalled)\nstderr:\n%s", round, code, p.stderr)
		}
		now := w.counts()
		t.Logf("round %d: started in %v, SIGKILL after %v: %d operations recorded, %d of them writes lost",
			round, started.Round(time.Millisecond), after.Round(time.Millisecond), now.ops-before.ops, now.lost-before.lost)
		if t.Failed() {
			t.FailNow()
		}
	}
	began := time.Now()
	p = w.start(t, dir, cfg.kills+1)
	started := time.Since(began)
	w.readBack(t, p, cfg.kills+1)
	t.Logf("read back: started in %v, every mission and balance read in %v",
		started.Round(time.Millisecond), (time.Since(began) - started).Round(time.Millisecond))
	p.signal(t, syscall.SIGTERM)
	if code := p.wait(t); code != 0 {
		t.Fatalf("SIGTERM: exit code %d\nstderr:\n%s", code, p.stderr)
	}
	w.annotate("stopped", "SIGTERM", w.now())
	if out, code := runBinary(t, "verify", "--data-dir", dir); code != 0 || !strings.HasPrefix(linLastLine(out), "ok: ") {
		t.Fatalf("verify --data-dir after the rounds: exit %d\n%s", code, out)
	}
	w.check(t)
}

// linWorld is the recorder: the groups' missions as the clients learnt them,
// and the history.
type linWorld struct {
	cfg    linConfig
	seed   uint64
	begin  time.Time
	groups []*linGroup

	mu          sync.Mutex
	ops         []porcupine.Operation
	notes       []porcupine.Annotation
	clients     int // porcupine client ids handed out
	lostWrites  int // writes left open: connection broken by a kill
	lostCreates int // creates whose connection broke: their id is unknown, so nothing can observe them
	lostReads   int // reads whose connection broke: they change nothing
	refused     int // connection refused: the request reached no node
	limited     int // 429: the node refused it before deciding anything
	ranAhead    int // writes answered with a later step than their own: the model refuses them
	unexpected  int // answers the model cannot produce, logged as they came
}

// linGroup is one partition: its identities, their agent tokens and its missions.
type linGroup struct {
	index  int
	owner  string   // the owner token, which publishes and settles
	names  []string // public_ids of the claimers
	tokens []string // their agent tokens

	mu       sync.Mutex
	missions []*linMission
	byID     map[string]int
	open     []int // not known to be settled, oldest first
	recheck  []int // missions whose last write was lost: read them first after the restart
}

// linMission is what the clients believe of a mission, which steers their
// choices; the model decides, not this.
type linMission struct {
	id      string
	reward  int64
	phase   linPhase // linAbsent when unsure
	claimer int      // index+1
}

func newLinWorld(cfg linConfig, seed uint64) *linWorld {
	w := &linWorld{cfg: cfg, seed: seed, begin: time.Now()}
	for g := range cfg.groups {
		grp := &linGroup{index: g, byID: map[string]int{}}
		for i := range cfg.identities {
			grp.names = append(grp.names, fmt.Sprintf("lin-g%d-i%d", g, i))
		}
		w.groups = append(w.groups, grp)
	}
	return w
}

// counts is how many operations and lost writes the history holds.
func (w *linWorld) counts() (c struct{ ops, lost int }) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c.ops, c.lost = len(w.ops), w.lostWrites
	return c
}

// now is the time since the test began, on the monotonic clock.
func (w *linWorld) now() int64 { return time.Since(w.begin).Nanoseconds() }

func (w *linWorld) annotate(desc, details string, at int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.notes = append(w.notes, porcupine.Annotation{Tag: "civnode", Start: at, Description: desc, Details: details})
}

func (w *linWorld) up(round int) {
	w.annotate(fmt.Sprintf("up %d", round), fmt.Sprintf("round %d: the node listens", round), w.now())
}

func (w *linWorld) start(t *testing.T, dir string, round int) *process {
	t.Helper()
	p := startProcess(t, dir)
	w.up(round)
	return p
}

// setup bootstraps each group's identities with an active controller binding
// and issues each an agent token, with the owner token.
func (w *linWorld) setup(t *testing.T, p *process) {
	t.Helper()
	for _, g := range w.groups {
		g.owner = p.token
		for _, name := range g.names {
			var id struct {
				AgentDID string `json:"agent_did"`
			}
			linMustPost(t, p, p.token, "/v1/civilization/bootstrap-identity",
				map[string]any{"display_name": name, "public_id": name}, &id)
			linMustPost(t, p, p.token, "/v1/civilization/controller-binding",
				map[string]any{"agent_did": id.AgentDID, "controller_kind": "local_model", "controller_ref": "ref-" + name}, nil)
			var tok struct {
				Token string `json:"token"`
			}
			linMustPost(t, p, p.token, "/v1/admin/tokens", map[string]any{"kind": "agent", "acts_for": name}, &tok)
			g.tokens = append(g.tokens, tok.Token)
		}
	}
}

func linMustPost(t *testing.T, p *process, token, path string, body, v any) {
	t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	status, resp, err := linDo(httpClient, http.MethodPost, p.url+path, token, raw)
	if err != nil || status != http.StatusOK {
		t.Fatalf("POST %s: %d %s %v", path, status, resp, err)
	}
	if v != nil {
		if err := json.Unmarshal(resp, v); err != nil {
			t.Fatalf("POST %s: decode %s: %v", path, resp, err)
		}
	}
}

// linDo sends one request; err is a transport error, when no whole answer came.
func linDo(hc *http.Client, method, url, token string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, b, nil
}

// round runs the clients against p and SIGKILLs p after the given time; it
// returns once every client has stopped. killed is set just before the
// signal: a connection error before it is a failure.
func (w *linWorld) round(t *testing.T, p *process, round int, after time.Duration, seed uint64) {
	t.Helper()
	n := w.cfg.groups * w.cfg.clients
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	defer hc.CloseIdleConnections()
	var (
		killed   atomic.Bool
		killOnce sync.Once
		wg       sync.WaitGroup
	)
	kill := func(why string) {
		killOnce.Do(func() {
			killed.Store(true)
			at := w.now()
			if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Errorf("round %d: SIGKILL: %v", round, err)
			}
			w.annotate("SIGKILL", fmt.Sprintf("round %d: %s", round, why), at)
		})
	}
	for c := range n {
		g := w.groups[c%w.cfg.groups]
		rng := rand.New(rand.NewPCG(seed, uint64(c)))
		wg.Go(func() { w.client(t, p, hc, g, round, rng, &killed, kill) })
	}
	timer := time.AfterFunc(after, func() { kill(fmt.Sprintf("after %v", after)) })
	defer timer.Stop()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(after + waitTimeout):
		kill("clients stuck")
		t.Fatalf("round %d: clients still running %v after the kill", round, waitTimeout)
	}
}

// client issues operations of group g until one ends in a connection error,
// which after the kill every one does: the client's last operation was in
// flight when the node died or was sent to a dead node.
func (w *linWorld) client(t *testing.T, p *process, hc *http.Client, g *linGroup, round int, rng *rand.Rand, killed *atomic.Bool, kill func(string)) {
	w.mu.Lock()
	id := w.clients
	w.clients++
	w.mu.Unlock()
	for {
		req := g.choose(rng)
		call := w.now()
		status, body, err := linDo(hc, req.method, p.url+req.path, req.token, req.body)
		ret := w.now()
		meta := fmt.Sprintf("round %d: %s %s", round, req.method, req.path)
		if err != nil {
			if !killed.Load() {
				t.Errorf("round %d: %s %s before the kill: %v", round, req.method, req.path, err)
				kill("a client failed")
			}
			w.lost(g, req.in, id, call, meta, err)
			return
		}
		w.answered(t, g, req.in, id, call, ret, meta, status, body)
	}
}

// linRequest is one operation to send.
type linRequest struct {
	in     linInput
	method string
	path   string
	token  string
	body   []byte
}

// linWindow is how many of a group's oldest open missions its clients work
// on, so that they contend for the same ones.
const linWindow = 3

// choose picks the next operation for a client of g: first a read of a
// mission whose write was lost, else mostly the next step of one of the
// oldest open missions, and creates and reads besides.
func (g *linGroup) choose(rng *rand.Rand) linRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.recheck) > 0 {
		m := g.recheck[0]
		g.recheck = g.recheck[1:]
		return g.request(linReadMission, m, 0, "")
	}
	r := rng.IntN(100)
	who := rng.IntN(len(g.names))
	switch {
	case len(g.open) == 0 || r < 10:
		reward := 1 + rng.Int64N(1000)
		body := fmt.Sprintf(`{"title":"Linear g%d","description":"A mission of the linearizability test.",`+
			`"publisher":"genesis","publisher_kind":"planetary_government","domain":"research","subnet_id":"genesis",`+
			`"reward":{"agent_credit":%d,"reputation":1,"capacity":0,"treasury_share_credit":1}}`, g.index, reward)
		return linRequest{in: linInput{Kind: linCreate, Group: g.index, Reward: reward},
			method: http.MethodPost, path: "/v1/core/missions", token: g.owner, body: []byte(body)}
	case r < 20:
		return linRequest{in: linInput{Kind: linReadBalance, Group: g.index, Who: who},
			method: http.MethodGet, path: "/v1/civilization/public-identity?public_id=" + g.names[who], token: g.owner}
	}
	m := g.open[rng.IntN(min(linWindow, len(g.open)))]
	if r < 30 {
		return g.request(linReadMission, m, 0, "")
	}
	switch ms := g.missions[m]; ms.phase {
	case linCreated:
		return g.request(linClaim, m, who, fmt.Sprintf(`{"claimer":%q}`, g.names[who]))
	case linClaimed:
		if ms.claimer > 0 && rng.IntN(4) > 0 {
			who = ms.claimer - 1
		}
		return g.request(linComplete, m, who, `{"result":"done"}`)
	case linCompleted:
		return g.request(linSettle, m, 0, `{}`)
	}
	return g.request(linReadMission, m, 0, "")
}

// request is an operation on mission m; g.mu is held.
func (g *linGroup) request(kind linKind, m, who int, body string) linRequest {
	ms := g.missions[m]
	r := linRequest{in: linInput{Kind: kind, Group: g.index, Mission: m, MissionID: ms.id, Who: who, Reward: ms.reward},
		method: http.MethodPost, path: "/v1/core/missions/" + ms.id, token: g.owner}
	switch kind {
	case linReadMission:
		r.method = http.MethodGet
	case linClaim, linComplete:
		r.path += "/" + kind.String()
		r.token = g.tokens[who]
	case linSettle:
		r.path += "/settle"
	}
	if body != "" {
		r.body = []byte(body)
	}
	return r
}

// lost records an operation whose connection broke. A write may have taken
// effect: it stays in the history with no return. A create whose id never
// came back and a read change nothing any operation can observe, and a
// refused connection reached no node; those are only counted.
func (w *linWorld) lost(g *linGroup, in linInput, client int, call int64, meta string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		w.refused++
	case in.Kind == linCreate:
		w.lostCreates++
	case in.Kind == linReadMission || in.Kind == linReadBalance:
		w.lostReads++
	default:
		w.lostWrites++
		w.ops = append(w.ops, porcupine.Operation{ClientId: client, Input: in, Call: call,
			Output: linOutput{Unknown: true}, Return: linForever, Metadata: meta + ": " + err.Error()})
		g.mu.Lock()
		g.missions[in.Mission].phase = linAbsent
		g.recheck = append(g.recheck, in.Mission)
		g.mu.Unlock()
	}
}

// linAnswer is every field of the answers the model reads.
type linAnswer struct {
	MissionID string  `json:"mission_id"`
	State     string  `json:"state"`
	Claimer   *string `json:"claimer"`
	Reward    struct {
		AgentCredit int64 `json:"agent_credit"`
	} `json:"reward"`
	Code  string `json:"code"`
	Stats struct {
		Credit            int64 `json:"credit"`
		MissionsCompleted int64 `json:"missions_completed"`
	} `json:"stats"`
}

// answered records an operation the node answered, and updates what the
// clients believe of its mission.
func (w *linWorld) answered(t *testing.T, g *linGroup, in linInput, client int, call, ret int64, meta string, status int, body []byte) {
	if status == http.StatusTooManyRequests {
		w.mu.Lock()
		w.limited++
		w.mu.Unlock()
		return
	}
	var a linAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		t.Errorf("%s: answer %d %q is not JSON: %v", meta, status, body, err)
	}
	out := linOutput{Status: status, Code: a.Code}
	g.mu.Lock()
	switch {
	case status != http.StatusOK:
		if in.Kind != linReadBalance && in.Kind != linCreate && status == http.StatusConflict {
			g.missions[in.Mission].phase = linAbsent // someone else moved it: read it again
		}
	case in.Kind == linReadBalance:
		out = linOutput{Status: status, Credit: a.Stats.Credit, Completed: a.Stats.MissionsCompleted}
	default:
		if in.Kind == linCreate {
			m, ok := g.byID[a.MissionID]
			if !ok {
				m = len(g.missions)
				g.byID[a.MissionID] = m
				g.missions = append(g.missions, &linMission{id: a.MissionID, reward: in.Reward})
				g.open = append(g.open, m)
			}
			in.Mission, in.MissionID, out.Mission = m, a.MissionID, m
			meta += " → " + a.MissionID
		}
		out.Phase, out.Claimer, out.Reward = linPhaseOf(a.State), g.claimerOf(a.Claimer), a.Reward.AgentCredit
		ms := g.missions[in.Mission]
		ms.phase, ms.claimer = out.Phase, out.Claimer
		if out.Phase == linSettled {
			g.open = linDeleteIndex(g.open, in.Mission)
		}
	}
	g.mu.Unlock()
	if !linPlausible(in, out) {
		w.mu.Lock()
		w.unexpected++
		w.mu.Unlock()
		t.Logf("%s: unexpected answer %d %s", meta, status, body)
	}
	op := porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret, Metadata: meta}
	w.mu.Lock()
	defer w.mu.Unlock()
	own := linOwnPhase[in.Kind]
	if out.Status == http.StatusOK && own != linAbsent && out.Phase > own {
		w.ranAhead++
	}
	w.ops = append(w.ops, op)
}

// linOwnPhase is the phase a write's success leaves its mission in.
var linOwnPhase = [...]linPhase{linClaim: linClaimed, linComplete: linCompleted, linSettle: linSettled, linReadMission: linAbsent, linReadBalance: linAbsent, linCreate: linAbsent}

// linPlausible reports whether out is an answer the model can give at all,
// in some state; the others are logged with their bodies for the reader.
func linPlausible(in linInput, out linOutput) bool {
	switch out.Status {
	case http.StatusOK:
		return true
	case http.StatusConflict:
		return out.Code == "invalid_state" || in.Kind == linClaim && out.Code == "already_claimed"
	case http.StatusForbidden:
		return in.Kind == linComplete && out.Code == "forbidden"
	}
	return false
}

func linPhaseOf(state string) linPhase {
	for p, name := range linPhaseNames {
		if p != int(linAbsent) && name == state {
			return linPhase(p)
		}
	}
	return linAbsent
}

// claimerOf maps a record's claimer to its index+1 in g, 0 for none and 15
// (no identity of any group) for a name g does not have.
func (g *linGroup) claimerOf(name *string) int {
	if name == nil {
		return 0
	}
	for i, n := range g.names {
		if n == *name {
			return i + 1
		}
	}
	return 15
}

func linDeleteIndex(s []int, v int) []int {
	for i, x := range s {
		if x == v {
			return append(s[:i:i], s[i+1:]...)
		}
	}
	return s
}

// readBack reads every mission and balance of every group once, one group
// after another, on the node restarted after the last kill: what the kills
// left is then observed by answered operations.
func (w *linWorld) readBack(t *testing.T, p *process, round int) {
	t.Helper()
	for _, g := range w.groups {
		w.mu.Lock()
		id := w.clients
		w.clients++
		w.mu.Unlock()
		g.mu.Lock()
		var reqs []linRequest
		for m := range g.missions {
			reqs = append(reqs, g.request(linReadMission, m, 0, ""))
		}
		for who, name := range g.names {
			reqs = append(reqs, linRequest{in: linInput{Kind: linReadBalance, Group: g.index, Who: who},
				method: http.MethodGet, path: "/v1/civilization/public-identity?public_id=" + name, token: g.owner})
		}
		g.mu.Unlock()
		for _, req := range reqs {
			call := w.now()
			status, body, err := linDo(httpClient, req.method, p.url+req.path, req.token, nil)
			ret := w.now()
			if err != nil {
				t.Fatalf("read back %s: %v", req.path, err)
			}
			w.answered(t, g, req.in, id, call, ret, fmt.Sprintf("read back (start %d): GET %s", round, req.path), status, body)
		}
	}
}

// check runs porcupine over the history and writes its visualisation when
// the history is not linearizable (or -civnode.linear.html asks for it).
func (w *linWorld) check(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	ops, notes := w.ops, w.notes
	w.mu.Unlock()
	counts := map[string]int{}
	missions := 0
	for _, op := range ops {
		in, out := op.Input.(linInput), op.Output.(linOutput)
		switch {
		case out.Unknown:
			counts[in.Kind.String()+" lost"]++
		case out.Status == http.StatusOK:
			counts[in.Kind.String()+" 200"]++
		default:
			counts[fmt.Sprintf("%s %d %s", in.Kind, out.Status, out.Code)]++
		}
	}
	for _, g := range w.groups {
		missions += len(g.missions)
	}

	start := time.Now()
	res := porcupine.CheckOperationsTimeout(linModel, ops, w.cfg.checkTimeout)
	took := time.Since(start)
	t.Logf("linear: seed %d, %d kills, %d operations checked in %d partitions, %d of them writes lost to a kill; "+
		"not checked: %d lost creates, %d lost reads, %d refused connections, %d rate-limited; %d missions; "+
		"%d writes answered with a later step; check %v: %s",
		w.seed, w.cfg.kills, len(ops), w.cfg.groups, w.lostWrites, w.lostCreates, w.lostReads, w.refused, w.limited,
		missions, w.ranAhead, took.Round(time.Millisecond), res)
	t.Logf("linear: answers %v", counts)
	if counts["settle 200"] == 0 || counts["claim 200"] == 0 {
		t.Errorf("no mission was claimed and settled: the rounds were too short to test anything")
	}
	if w.unexpected > 0 {
		t.Errorf("%d answers no state of the model explains (logged above)", w.unexpected)
	}
	if res == porcupine.Ok && *linearHTML == "" {
		return
	}
	path := *linearHTML
	if path == "" {
		path = filepath.Join(os.TempDir(), fmt.Sprintf("civnode-linear-%d.html", w.seed))
	}
	_, info := porcupine.CheckOperationsVerbose(linModel, ops, w.cfg.checkTimeout)
	info.AddAnnotations(notes)
	if err := porcupine.VisualizePath(linModel, info, path); err != nil {
		t.Errorf("write the visualisation: %v", err)
	}
	switch res {
	case porcupine.Ok:
		t.Logf("visualisation of the history: %s", path)
	case porcupine.Illegal:
		linLogStuck(t, ops, info)
		t.Errorf("the history is not linearizable (seed %d); visualisation: %s", w.seed, path)
	default:
		t.Errorf("porcupine found no linearization within %v (seed %d); visualisation: %s", w.cfg.checkTimeout, w.seed, path)
	}
}

// linLogStuck logs, for each partition that porcupine could not linearize,
// how far it got and the first operations (by call time) it could not place.
func linLogStuck(t *testing.T, ops []porcupine.Operation, info porcupine.LinearizationInfo) {
	t.Helper()
	parts := linModel.Partition(ops)
	for i, partials := range info.PartialLinearizationsOperations() {
		placed := map[porcupine.Operation]bool{}
		for _, partial := range partials {
			if len(partial) > len(placed) {
				clear(placed)
				for _, op := range partial {
					placed[op] = true
				}
			}
		}
		if len(placed) == len(parts[i]) {
			continue
		}
		t.Logf("partition %d: the longest linearizable part holds %d of %d operations; the first left out:", i, len(placed), len(parts[i]))
		n := 0
		left := slices.DeleteFunc(slices.Clone(parts[i]), func(op porcupine.Operation) bool { return placed[op] })
		slices.SortFunc(left, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
		for _, op := range left {
			if n++; n > 5 {
				break
			}
			t.Logf("  [%d, %d] %s — %v", op.Call, op.Return, linModel.DescribeOperation(op.Input, op.Output), op.Metadata)
		}
	}
}

// linLastLine is the last non-empty line of out.
func linLastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}
