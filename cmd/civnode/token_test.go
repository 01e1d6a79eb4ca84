package main

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/eventlog"
)

var (
	secretLine = regexp.MustCompile(`^cvn_[0-9a-f]{64}\n$`)
	tokenIDIn  = regexp.MustCompile(`\btok_[0-9a-f]{12}\b`)
)

const cliAliceDID = "did:key:z6MkAliceTokenCLI"

// appendIdentity appends an identity event to a stopped node's chain, standing in
// for the identity commands.
func appendIdentity(t *testing.T, dir, typ, publicID, agentDID string) {
	t.Helper()
	l := openTestLog(t, dir)
	defer l.Close()
	if _, err := l.Append(context.Background(), eventlog.Draft{Type: typ,
		Payload: map[string]string{"agent_did": agentDID, "public_id": publicID, "display_name": publicID}}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// tokenCLI runs one token command and checks what it printed: on success, a
// create or rotate prints exactly the secret on stdout and never on stderr.
// It returns the secret (if any) and the token id named on stderr (if any).
func tokenCLI(t *testing.T, wantCode int, args ...string) (res cliResult, secret, id string) {
	t.Helper()
	res = runCLI(t, nil, append([]string{"token"}, args...)...)
	if res.code != wantCode {
		t.Fatalf("civnode token %v: code %d, want %d\nstdout %q\nstderr %q", args, res.code, wantCode, res.stdout, res.stderr)
	}
	if wantCode == 0 && (args[0] == "create" || args[0] == "rotate") {
		if !secretLine.MatchString(res.stdout) {
			t.Fatalf("civnode token %v: stdout %q, want one secret line", args, res.stdout)
		}
		secret = strings.TrimSpace(res.stdout)
		if strings.Contains(res.stderr, secret[4:]) {
			t.Fatalf("civnode token %v printed the secret on stderr", args)
		}
	}
	id = tokenIDIn.FindString(res.stderr)
	return res, secret, id
}

// TestTokenCommands issues, rotates, revokes and lists tokens offline on a
// stopped node's data dir and online through a running node, and checks that
// each change takes effect on the node and is audited by the right actor.
func TestTokenCommands(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "node")
	n := startNode(t, dir)
	n.stop(t)
	appendIdentity(t, dir, "identity.bootstrapped", "alice", cliAliceDID)
	key, err := datadir.LoadNodeKey(filepath.Join(dir, "node.key"), discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	nodeDID := eventlog.DIDKey(key.Public().(ed25519.PublicKey))
	tipBefore := openTipSeq(t, dir)
	var secrets []string
	var cliStderr strings.Builder

	// Offline: the node is stopped.
	res, obsSecret, obsID := tokenCLI(t, 0, "create", "--observer", "--data-dir", dir)
	if obsID == "" || !strings.Contains(res.stderr, "created observer token "+obsID) {
		t.Errorf("create --observer stderr %q", res.stderr)
	}
	cliStderr.WriteString(res.stderr)
	res, agentSecret, agentID := tokenCLI(t, 0, "create", "--acts-for", "alice", "--data-dir", dir)
	if !strings.Contains(res.stderr, "created agent token "+agentID+" acting for alice ("+cliAliceDID+")") {
		t.Errorf("create --acts-for stderr %q", res.stderr)
	}
	cliStderr.WriteString(res.stderr)
	secrets = append(secrets, obsSecret, agentSecret)
	res, _, _ = tokenCLI(t, 1, "create", "--acts-for", "bob", "--data-dir", dir)
	if !strings.Contains(res.stderr, `identity_not_found: no identity with public_id "bob" (acts_for)`) || res.stdout != "" {
		t.Errorf("create for unknown identity: stdout %q stderr %q", res.stdout, res.stderr)
	}
	res, _, _ = tokenCLI(t, 0, "list", "--data-dir", dir)
	if !regexp.MustCompile(`(?m)^ID +KIND +PUBLIC_ID +AGENT_DID +CREATED +ROTATED +REVOKED\n` +
		obsID + ` +observer +- +- +\S+Z +- +-\n` +
		agentID + ` +agent +alice +` + cliAliceDID + ` +\S+Z +- +-\n$`).MatchString(res.stdout) {
		t.Errorf("offline list:\n%s", res.stdout)
	}

	// Online: a node runs on the data dir and picks up the offline tokens.
	n = startNodeArgs(t, dir, "--log-level", "debug")
	addr := strings.TrimPrefix(n.url, "http://")
	getJSON(t, n.url+"/v1/events", obsSecret, 200, nil)
	getJSON(t, n.url+"/v1/state", obsSecret, 403, nil)
	getJSON(t, n.url+"/v1/state", agentSecret, 200, nil)
	getJSON(t, n.url+"/v1/audit", agentSecret, 403, nil)

	res, obs2Secret, obs2ID := tokenCLI(t, 0, "create", "--observer", "--data-dir", dir, "--addr", addr)
	cliStderr.WriteString(res.stderr)
	secrets = append(secrets, obs2Secret)
	getJSON(t, n.url+"/v1/events", obs2Secret, 200, nil)

	res, agentSecret2, id := tokenCLI(t, 0, "rotate", agentID, "--data-dir", dir, "--addr", addr)
	if id != agentID || !strings.Contains(res.stderr, "rotated agent token "+agentID) {
		t.Errorf("rotate stderr %q", res.stderr)
	}
	cliStderr.WriteString(res.stderr)
	secrets = append(secrets, agentSecret2)
	getJSON(t, n.url+"/v1/state", agentSecret, 401, nil)
	getJSON(t, n.url+"/v1/state", agentSecret2, 200, nil)

	res, _, id = tokenCLI(t, 0, "revoke", obsID, "--data-dir", dir, "--addr", addr)
	if id != obsID || res.stdout != "" || !strings.Contains(res.stderr, "revoked observer token "+obsID) {
		t.Errorf("revoke: stdout %q stderr %q", res.stdout, res.stderr)
	}
	getJSON(t, n.url+"/v1/events", obsSecret, 401, nil)

	res, _, _ = tokenCLI(t, 0, "list", "--data-dir", dir, "--addr", addr)
	if !regexp.MustCompile(`(?m)^`+obsID+` +observer +- +- +\S+Z +- +\S+Z$`).MatchString(res.stdout) ||
		!regexp.MustCompile(`(?m)^`+agentID+` +agent +alice +\S+ +\S+Z +\S+Z +-$`).MatchString(res.stdout) ||
		!regexp.MustCompile(`(?m)^`+obs2ID+` +observer`).MatchString(res.stdout) {
		t.Errorf("online list:\n%s", res.stdout)
	}
	// Refusals read alike online and offline.
	res, _, _ = tokenCLI(t, 1, "create", "--acts-for", "bob", "--data-dir", dir, "--addr", addr)
	if !strings.Contains(res.stderr, `identity_not_found: no identity with public_id "bob" (acts_for)`) {
		t.Errorf("online create for unknown identity: stderr %q", res.stderr)
	}
	res, _, _ = tokenCLI(t, 1, "rotate", "tok_000000000000", "--data-dir", dir, "--addr", addr)
	if !strings.Contains(res.stderr, "token_not_found") {
		t.Errorf("online rotate of unknown token: stderr %q", res.stderr)
	}
	res, _, _ = tokenCLI(t, 1, "rotate", obsID, "--data-dir", dir, "--addr", addr)
	if !strings.Contains(res.stderr, "invalid_state") {
		t.Errorf("online rotate of revoked token: stderr %q", res.stderr)
	}
	// The control socket in the data dir comes first; --addr is for when it
	// cannot be reached (TestTokenOverTCPWithProof).
	res, _, _ = tokenCLI(t, 0, "list", "--data-dir", dir, "--addr", "127.0.0.1:1")
	if !strings.Contains(res.stdout, obs2ID) {
		t.Errorf("list over the socket with a wrong --addr:\n%s", res.stdout)
	}

	var audit auditBody
	getJSON(t, n.url+"/v1/audit?action=token.*", n.token, 200, &audit)
	var got []string
	for _, e := range audit.Entries {
		got = append(got, e.Action+" "+e.Actor)
	}
	want := []string{
		"token.created " + nodeDID, "token.created " + nodeDID,
		"token.created token:owner", "token.rotated token:owner", "token.revoked token:owner",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("token audit entries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	n.stop(t)

	// Offline again: a rotation and a revocation made while the node is down hold
	// after it starts.
	res, obs2Secret2, _ := tokenCLI(t, 0, "rotate", obs2ID, "--data-dir", dir)
	cliStderr.WriteString(res.stderr)
	secrets = append(secrets, obs2Secret2)
	tokenCLI(t, 0, "revoke", agentID, "--data-dir", dir)
	n2 := startNode(t, dir)
	getJSON(t, n2.url+"/v1/events", obs2Secret2, 200, nil)
	getJSON(t, n2.url+"/v1/events", obs2Secret, 401, nil)
	getJSON(t, n2.url+"/v1/state", agentSecret2, 401, nil)
	n2.stop(t)

	if es := auditActions(t, dir, "token.*"); len(es) != 7 || es[5].Action != "token.rotated" || es[5].Actor != nodeDID ||
		es[6].Action != "token.revoked" || es[6].Actor != nodeDID {
		t.Errorf("token audit entries after the offline changes: %+v", es)
	}
	if tip := openTipSeq(t, dir); tip != tipBefore {
		t.Errorf("chain grew from %d to %d events: token actions must not append events", tipBefore, tip)
	}
	// No secret in any log, stored record, audit entry or CLI stderr.
	all := n.stderr.String() + n2.stderr.String() + cliStderr.String() + string(mustJSON(t, auditActions(t, dir, "")))
	l := openTestLog(t, dir)
	defer l.Close()
	recs, err := l.Records("token")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		all += string(r)
	}
	if !strings.Contains(n.stderr.String(), "/v1/admin/tokens") {
		t.Error("the node's debug log did not capture the admin requests; the check below proves nothing")
	}
	for _, s := range secrets {
		if strings.Contains(all, s[4:]) {
			t.Errorf("a token secret appears in a log, record or audit entry")
		}
	}
}

func openTipSeq(t *testing.T, dir string) uint64 {
	t.Helper()
	l := openTestLog(t, dir)
	defer l.Close()
	return l.Tip().Seq
}

func TestTokenCommandLine(t *testing.T) {
	missing := t.TempDir() + "/missing"
	for _, tc := range []struct {
		name      string
		args      []string
		code      int
		stderrHas string
	}{
		{"create needs a kind", []string{"create", "--data-dir", missing}, 2, "needs --acts-for PUBLIC_ID or --observer"},
		{"create both kinds", []string{"create", "--observer", "--acts-for", "alice", "--data-dir", missing}, 2, "not both"},
		{"rotate needs an id", []string{"rotate", "--data-dir", missing}, 2, "accepts 1 arg"},
		{"revoke one id", []string{"revoke", "a", "b", "--data-dir", missing}, 2, "accepts 1 arg"},
		{"list no args", []string{"list", "x", "--data-dir", missing}, 2, "unknown command"},
		{"list no node", []string{"list", "--data-dir", missing}, 1, "no node in"},
		{"create no node", []string{"create", "--observer", "--data-dir", missing}, 1, "no node in"},
		{"default dir needs home", []string{"list"}, 1, "set --data-dir or CIVNODE_DATA_DIR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runCLI(t, nil, append([]string{"token"}, tc.args...)...)
			if res.code != tc.code || !strings.Contains(res.stderr, tc.stderrHas) || res.stdout != "" {
				t.Errorf("code %d (want %d), stdout %q, stderr %q (want %q)", res.code, tc.code, res.stdout, res.stderr, tc.stderrHas)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
