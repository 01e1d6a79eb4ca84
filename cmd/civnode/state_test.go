package main

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/internal/testtool"
	"github.com/civnode/civnode/witness"
)

// jsStateVerifier is docs/examples/verify-state-proof.mjs, the state proof
// verifier in JavaScript with Node's crypto alone.
const jsStateVerifier = "../../docs/examples/verify-state-proof.mjs"

// runJSStateVerifier runs the JavaScript verifier on file with args and
// returns its output and exit status.
func runJSStateVerifier(t *testing.T, nodeJS, file string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, nodeJS, append([]string{jsStateVerifier, file}, args...)...).CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	}
	t.Fatalf("run %s: %v", jsStateVerifier, err)
	return "", 0
}

// stateAnswer is a proof file's members, as far as these tests read them.
type stateAnswer struct {
	Key        string          `json:"key"`
	Value      json.RawMessage `json:"value"`
	ThroughSeq uint64          `json:"through_seq"`
	StateRoot  string          `json:"state_root"`
	Siblings   []string        `json:"siblings"`
	Commitment struct {
		Checkpoint string `json:"checkpoint"`
		Seq        uint64 `json:"seq"`
	} `json:"commitment"`
}

func readStateAnswer(t *testing.T, b []byte) (stateAnswer, map[string]any) {
	t.Helper()
	var a stateAnswer
	var m map[string]any
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatalf("the proof %s: %v", b, err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return a, m
}

// adaCredit is the credit in the stats of an identity record.
func adaCredit(t *testing.T, value json.RawMessage) int64 {
	t.Helper()
	var rec struct {
		Stats struct {
			Credit int64 `json:"credit"`
		} `json:"stats"`
	}
	if err := json.Unmarshal(value, &rec); err != nil {
		t.Fatalf("the record %s: %v", value, err)
	}
	return rec.Stats.Credit
}

// writeAltered writes the proof m with change applied to a copy, and returns
// the file's path.
func writeAltered(t *testing.T, m map[string]any, change func(map[string]any)) string {
	t.Helper()
	b, _ := json.Marshal(m)
	var c map[string]any
	json.Unmarshal(b, &c)
	change(c)
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "altered.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestStateProveVerify: on a running node, Ada's credits change when a
// mission is settled; once a state.committed covers it, state prove writes
// the proof of her identity record (with a token at --addr, and as the
// owner through the data dir; an observer's token is refused), which state verify and the JavaScript
// verifier accept with the node's key, printing the same line, and refuse
// altered: a changed value, a changed sibling, a root the commitment does not
// sign, another key's name, another node's key. An absent key has its proof
// too.
func TestStateProveVerify(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "node")
	n := startNodeArgs(t, dir, "--state-interval", "100ms")
	s := &survey{t: t, url: n.url, token: n.token}
	var ada struct {
		AgentDID string `json:"agent_did"`
	}
	s.post("/v1/civilization/bootstrap-identity", map[string]any{"display_name": "Ada", "public_id": "ada", "role": "enforcer"}, &ada)
	s.post("/v1/civilization/controller-binding", map[string]any{"agent_did": ada.AgentDID, "controller_kind": "local_model", "controller_ref": "r"}, nil)
	id := s.publish("Survey")
	s.claim(id)
	s.complete(id, "surveyed")
	s.settle(id)
	var record json.RawMessage
	getJSON(t, n.url+"/v1/civilization/public-identity?agent_did="+ada.AgentDID, n.token, 200, &record)
	if adaCredit(t, record) != 7 {
		t.Fatalf("Ada's record after the settlement: %s", record)
	}
	vkey := summaryOf(t, n.url, n.token).VerifierKey
	key := "identity/" + ada.AgentDID
	// The route takes the tokens of the record's own route, not an
	// observer's.
	obs := trObserverToken(t, dir)
	if r := runCLI(t, nil, "state", "prove", key, "--addr", n.url, "--token", obs); r.code != 1 || !strings.Contains(r.stderr, "not an observer's (403 Forbidden: ") || strings.Contains(r.stderr, "transparency endpoints") {
		t.Errorf("state prove with an observer token: exit %d, %q", r.code, r.stderr)
	}

	// The newest commitment covers the settlement once a proof shows her
	// credit.
	proof := filepath.Join(t.TempDir(), "ada.json")
	var a stateAnswer
	var m map[string]any
	waitFor(t, "a state.committed covering the settlement", func() (bool, string) {
		r := runCLI(t, nil, "state", "prove", key, "--addr", n.url, "--token", n.token, "--out", proof)
		if r.code != 0 {
			t.Fatalf("state prove: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		if !strings.HasPrefix(r.stdout, "ok: "+key+" = ") || !strings.Contains(r.stdout, "written to "+proof) {
			t.Fatalf("state prove --out printed %q", r.stdout)
		}
		b, err := os.ReadFile(proof)
		if err != nil {
			t.Fatal(err)
		}
		a, m = readStateAnswer(t, b)
		return adaCredit(t, a.Value) == 7, string(a.Value)
	})
	if a.Key != key || a.Commitment.Seq <= a.ThroughSeq {
		t.Fatalf("the proof is of %s, commitment %d through seq %d", a.Key, a.Commitment.Seq, a.ThroughSeq)
	}
	// The record is the JCS form of the route's answer.
	route, err := eventlog.CanonicalObject(getJSON(t, n.url+"/v1/civilization/public-identity?agent_did="+ada.AgentDID, n.token, 200, nil))
	if err != nil || string(a.Value) != string(route) {
		t.Errorf("the proof's value\n%s\nis not the route's\n%s (%v)", a.Value, route, err)
	}

	verify := runCLI(t, nil, "state", "verify", proof, "--verifier-key", vkey, "--key", key)
	want := fmt.Sprintf("ok: %s = {", key)
	if verify.code != 0 || !strings.HasPrefix(verify.stdout, want) || strings.Count(verify.stdout, "\n") != 1 ||
		!strings.Contains(verify.stdout, fmt.Sprintf(" through seq %d, root %s, in the tree of ", a.ThroughSeq, a.StateRoot)) ||
		!strings.HasSuffix(verify.stdout, " events signed by "+strings.SplitN(vkey, "+", 2)[0]+"\n") {
		t.Fatalf("state verify: exit %d, %q %q", verify.code, verify.stdout, verify.stderr)
	}

	// Through the data dir, as the owner: stdout holds the proof.
	local := runCLI(t, nil, "state", "prove", key, "--data-dir", dir)
	if local.code != 0 {
		t.Fatalf("state prove --data-dir: exit %d\n%s", local.code, local.stderr)
	}
	if la, _ := readStateAnswer(t, []byte(local.stdout)); la.Key != key || adaCredit(t, la.Value) != 7 {
		t.Errorf("state prove --data-dir: %s", local.stdout)
	}
	if r := runCLI(t, []byte(local.stdout), "state", "verify", "-", "--verifier-key", vkey); r.code != 0 {
		t.Errorf("state verify - of the data dir's proof: exit %d, %q", r.code, r.stdout)
	}

	// The token from $CIVNODE_TOKEN, as with --token.
	var envOut, envErr syncBuffer
	envMain := testMain(nil, &envOut, &envErr)
	envMain.Getenv = func(k string) string {
		if k == tokenEnv {
			return n.token
		}
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	defer cancel()
	if err := envMain.Run(ctx, []string{"state", "prove", key, "--addr", n.url}); err != nil {
		t.Fatalf("state prove with $%s: %v\n%s", tokenEnv, err, envErr.String())
	}
	if ea, _ := readStateAnswer(t, []byte(envOut.String())); ea.Key != key || adaCredit(t, ea.Value) != 7 {
		t.Errorf("state prove with $%s: %s", tokenEnv, envOut.String())
	}

	// An absent key: null, and a proof of its absence.
	absent := filepath.Join(t.TempDir(), "absent.json")
	if r := runCLI(t, nil, "state", "prove", "mission/no-such-mission", "--addr", n.url, "--token", n.token, "--out", absent); r.code != 0 ||
		!strings.HasPrefix(r.stdout, "ok: mission/no-such-mission = absent through seq ") {
		t.Fatalf("state prove of an absent key: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}

	_, otherKey, _ := ed25519.GenerateKey(nil)
	other, err := eventlog.Open(eventlog.Options{InMemory: true, Key: otherKey, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	otherVKey := other.VerifierKey()
	other.Close()

	altered := []struct {
		name string
		file string
		vkey string
		says string
	}{
		{"a changed value", writeAltered(t, m, func(c map[string]any) {
			c["value"].(map[string]any)["stats"].(map[string]any)["credit"] = 8
		}), vkey, "invalid: the record of " + key + " under the state root: state proof does not lead to the root"},
		{"a changed sibling", writeAltered(t, m, func(c map[string]any) {
			sib := c["siblings"].([]any)
			sib[len(sib)-1] = a.StateRoot
		}), vkey, "invalid: the record of " + key},
		{"a root the commitment does not sign", writeAltered(t, m, func(c map[string]any) {
			c["state_root"] = a.Siblings[0]
		}), vkey, "are not those state.committed"},
		{"another key's name", writeAltered(t, m, func(c map[string]any) {
			c["key"] = "identity/did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"
		}), vkey, "invalid: the record of identity/did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"},
		{"another node's key", proof, otherVKey, "invalid: the commitment: the checkpoint is signed by another key"},
	}
	nodeJS := testtool.Need(t, "node", "install Node.js 20 or later to run docs/examples/verify-state-proof.mjs")
	if out, code := runJSStateVerifier(t, nodeJS, proof, vkey, "--key", key); code != 0 || out != verify.stdout {
		t.Errorf("verify-state-proof.mjs: exit %d, %q; state verify printed %q", code, out, verify.stdout)
	}
	if out, code := runJSStateVerifier(t, nodeJS, absent, vkey); code != 0 || !strings.HasPrefix(out, "ok: mission/no-such-mission = absent through seq ") {
		t.Errorf("verify-state-proof.mjs of the absence: exit %d, %q", code, out)
	}
	for _, tc := range altered {
		r := runCLI(t, nil, "state", "verify", tc.file, "--verifier-key", tc.vkey)
		if r.code != 1 || !strings.HasPrefix(r.stdout, "invalid: ") || !strings.Contains(r.stdout, tc.says) || strings.Count(r.stdout, "\n") != 1 {
			t.Errorf("state verify of %s: exit %d, %q %q; want 1 and a line naming %q", tc.name, r.code, r.stdout, r.stderr, tc.says)
		}
		if out, code := runJSStateVerifier(t, nodeJS, tc.file, tc.vkey); code != 1 || !strings.HasPrefix(out, "invalid: ") {
			t.Errorf("verify-state-proof.mjs of %s: exit %d, %q", tc.name, code, out)
		}
	}
	// The answer of another key than asked is refused by --key.
	if r := runCLI(t, nil, "state", "verify", absent, "--verifier-key", vkey, "--key", key); r.code != 1 ||
		!strings.Contains(r.stdout, "invalid: the answer is of mission/no-such-mission, not "+key) {
		t.Errorf("state verify --key of another key's proof: exit %d, %q", r.code, r.stdout)
	}
	if out, code := runJSStateVerifier(t, nodeJS, absent, vkey, "--key", key); code != 1 || !strings.Contains(out, "invalid: the answer is of mission/no-such-mission") {
		t.Errorf("verify-state-proof.mjs --key of another key's proof: exit %d, %q", code, out)
	}
}

// TestStateProveWitnessed: a node with a witness proves in its witnessed
// checkpoint, which the proof carries with the cosignature: state verify
// --witness --quorum 1 and the JavaScript verifier accept it, and refuse it
// with a witness that did not cosign.
func TestStateProveWitnessed(t *testing.T) {
	root := t.TempDir()
	a, wkey, vkey := startWitnessedPair(t, root, "--state-interval", "100ms")
	var ada struct {
		AgentDID string `json:"agent_did"`
	}
	getJSON(t, a.url+"/v1/civilization/public-identity?public_id=ada", a.token, 200, &ada)
	key := "identity/" + ada.AgentDID
	proof := filepath.Join(t.TempDir(), "ada.json")
	if r := runCLI(t, nil, "state", "prove", key, "--addr", a.url, "--token", a.token, "--out", proof); r.code != 0 {
		t.Fatalf("state prove: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	b, err := os.ReadFile(proof)
	if err != nil {
		t.Fatal(err)
	}
	ans, _ := readStateAnswer(t, b)
	if !strings.Contains(ans.Commitment.Checkpoint, "\n— "+strings.SplitN(wkey, "+", 2)[0]+" ") {
		t.Fatalf("the proof's checkpoint carries no cosignature of %s:\n%s", wkey, ans.Commitment.Checkpoint)
	}
	r := runCLI(t, nil, "state", "verify", proof, "--verifier-key", vkey, "--witness", wkey, "--quorum", "1")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "ok: "+key+" = {") || !strings.HasSuffix(r.stdout, ", witnessed by 1 of 1\n") {
		t.Fatalf("state verify --witness: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	okLine := r.stdout
	_, otherWitness, _ := ed25519.GenerateKey(nil)
	otherWKey := cosignatureVKey(t, otherWitness)
	if r := runCLI(t, nil, "state", "verify", proof, "--verifier-key", vkey, "--witness", otherWKey); r.code != 1 ||
		!strings.HasPrefix(r.stdout, "invalid: the checkpoint is not witnessed: 0 of 1 cosignatures") {
		t.Errorf("state verify with a witness that did not cosign: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	nodeJS := testtool.Need(t, "node", "install Node.js 20 or later to run docs/examples/verify-state-proof.mjs")
	if out, code := runJSStateVerifier(t, nodeJS, proof, vkey, "--witness", wkey, "--quorum", "1"); code != 0 || out != okLine {
		t.Errorf("verify-state-proof.mjs --witness: exit %d, %q", code, out)
	}
	if out, code := runJSStateVerifier(t, nodeJS, proof, vkey, "--witness", otherWKey); code != 1 || !strings.HasPrefix(out, "invalid: not witnessed: 0 of 1 cosignatures") {
		t.Errorf("verify-state-proof.mjs with a witness that did not cosign: exit %d, %q", code, out)
	}
}

// cosignatureVKey is the cosignature/v1 verifier key of a witness with key.
func cosignatureVKey(t *testing.T, key ed25519.PrivateKey) string {
	t.Helper()
	s, err := witness.NewCosignatureSigner("witness.example/other", key)
	if err != nil {
		t.Fatal(err)
	}
	return s.VerifierKey()
}

// TestStateUsage: the mistakes on state's command lines are usage errors.
func TestStateUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"state", "prove"}, "accepts 1 arg(s)"},
		{[]string{"state", "prove", "ada"}, "want <kind>/<id>"},
		{[]string{"state", "prove", "identity/"}, "want <kind>/<id>"},
		{[]string{"state", "prove", "identity/x", "--token", "t", "--data-dir", "d"}, "not both"},
		{[]string{"state", "verify", "f"}, "needs --verifier-key"},
		{[]string{"state", "verify", "f", "--verifier-key", "nope"}, "--verifier-key"},
		{[]string{"state", "verify"}, "accepts 1 arg(s)"},
	} {
		r := runCLI(t, nil, tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
	_, key, _ := ed25519.GenerateKey(nil)
	l, err := eventlog.Open(eventlog.Options{InMemory: true, Key: key, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	vkey := l.VerifierKey()
	l.Close()
	wkey := cosignatureVKey(t, key)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--witness", "nope"}, "--witness"},
		{[]string{"--witness", wkey, "--quorum", "2"}, "--quorum must be from 1"},
		{[]string{"--quorum", "0"}, "--quorum must be from 1"},
	} {
		r := runCLI(t, nil, append([]string{"state", "verify", "f", "--verifier-key", vkey}, tc.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
	// A file that is not a proof is invalid, not a crash.
	if r := runCLI(t, []byte(`{"key":"identity/x"}`), "state", "verify", "-", "--verifier-key", vkey); r.code != 1 || !strings.HasPrefix(r.stdout, "invalid: ") {
		t.Errorf("state verify of a file that is not a proof: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	// A data dir without a running node says so.
	if r := runCLI(t, nil, "state", "prove", "identity/x", "--data-dir", t.TempDir()); r.code != 1 || !strings.Contains(r.stderr, "no node runs on") {
		t.Errorf("state prove on a data dir without a node: exit %d, %q", r.code, r.stderr)
	}
}

// TestStateManAndCompletion: the state commands have man pages with their
// flags, and the shell completion knows them.
func TestStateManAndCompletion(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "man")
	if r := runCLI(t, nil, "man", dir); r.code != 0 {
		t.Fatalf("man: %d %s", r.code, r.stderr)
	}
	for page, flags := range map[string][]string{
		"civnode-state.1":        {"prove", "verify"},
		"civnode-state-prove.1":  {"data-dir", "ca-file", "out", "token"},
		"civnode-state-verify.1": {"verifier-key", "witness", "quorum", "max-age"},
	} {
		b, err := os.ReadFile(filepath.Join(dir, page))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range flags {
			if !strings.Contains(string(b), f) {
				t.Errorf("%s does not name %s", page, f)
			}
		}
	}
	r := runCLI(t, nil, "__complete", "state", "")
	if r.code != 0 || !strings.Contains(r.stdout, "prove\t") || !strings.Contains(r.stdout, "verify\t") {
		t.Errorf("completion of state: %d %q", r.code, r.stdout)
	}
}
