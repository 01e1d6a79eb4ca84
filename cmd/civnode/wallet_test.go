package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/civnode/civnode/eventlog"
)

var addressLine = regexp.MustCompile(`^0x[0-9a-fA-F]{40}\n$`)

// walletCLI runs one wallet command and checks its exit code; a create that
// succeeds prints exactly the address on stdout.
func walletCLI(t *testing.T, wantCode int, args ...string) (res cliResult, addr string) {
	t.Helper()
	res = runCLI(t, nil, append([]string{"wallet"}, args...)...)
	if res.code != wantCode {
		t.Fatalf("civnode wallet %v: code %d, want %d\nstdout %q\nstderr %q", args, res.code, wantCode, res.stdout, res.stderr)
	}
	if wantCode == 0 && args[0] == "create" {
		if !addressLine.MatchString(res.stdout) {
			t.Fatalf("civnode wallet %v: stdout %q, want the address alone", args, res.stdout)
		}
		addr = strings.TrimSpace(res.stdout)
	}
	if wantCode != 0 && res.stdout != "" {
		t.Errorf("civnode wallet %v failed but printed %q on stdout", args, res.stdout)
	}
	return res, addr
}

// TestWalletCommands creates and lists payment accounts offline on a stopped
// node's data dir and online through a running node, and checks that no
// output ever holds a key.
func TestWalletCommands(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "node")
	startNode(t, dir).stop(t)
	tipBefore := openTipSeq(t, dir)
	var outputs strings.Builder
	keep := func(r cliResult) { outputs.WriteString(r.stdout + r.stderr) }

	// Offline.
	res, mainAddr := walletCLI(t, 0, "create", "main", "--max-per-payment", "1000000", "--max-per-day", "5000000", "--data-dir", dir)
	keep(res)
	if !strings.Contains(res.stderr, "created payment account main ("+mainAddr+")") || strings.Contains(res.stderr, "warning") {
		t.Errorf("create stderr %q", res.stderr)
	}
	res, spareAddr := walletCLI(t, 0, "create", "spare", "--data-dir", dir)
	keep(res)
	if !strings.Contains(res.stderr, "warning: no --max-per-payment limit") || !strings.Contains(res.stderr, "warning: no --max-per-day limit") {
		t.Errorf("create without limits: stderr %q", res.stderr)
	}
	res, _ = walletCLI(t, 1, "create", "main", "--data-dir", dir)
	keep(res)
	if !strings.Contains(res.stderr, "payment_account_exists") {
		t.Errorf("duplicate create: stderr %q", res.stderr)
	}
	for _, bad := range [][]string{
		{"create", "Bad/Ref", "--data-dir", dir},
		{"create", "x", "--max-per-day", "-5", "--data-dir", dir},
		{"create", "x", "--max-per-payment", "1.5", "--data-dir", dir},
		{"create", "--data-dir", dir},
		{"create", "a", "b", "--data-dir", dir},
		{"list", "extra", "--data-dir", dir},
	} {
		res := runCLI(t, nil, append([]string{"wallet"}, bad...)...)
		keep(res)
		if res.code == 0 || res.stdout != "" {
			t.Errorf("wallet %v: code %d stdout %q", bad, res.code, res.stdout)
		}
	}
	res, _ = walletCLI(t, 0, "list", "--data-dir", dir)
	keep(res)
	if !regexp.MustCompile(`^REF +ADDRESS +MAX_PER_PAYMENT +MAX_PER_DAY +CREATED\n` +
		`main +` + mainAddr + ` +1000000 +5000000 +\S+Z\n` +
		`spare +` + spareAddr + ` +- +- +\S+Z\n$`).MatchString(res.stdout) {
		t.Errorf("offline list:\n%s", res.stdout)
	}
	if got := openTipSeq(t, dir); got != tipBefore {
		t.Errorf("wallet commands appended %d chain events", got-tipBefore)
	}

	// Online: the running node sees the offline accounts and creates more.
	n := startNodeArgs(t, dir, "--log-level", "debug")
	addr := strings.TrimPrefix(n.url, "http://")
	res, onlineAddr := walletCLI(t, 0, "create", "online", "--max-per-payment", "7", "--data-dir", dir)
	keep(res)
	res, tcpAddr := walletCLI(t, 0, "create", "over-tcp", "--max-per-day", "99", "--data-dir", dir, "--addr", addr)
	keep(res)
	res, _ = walletCLI(t, 1, "create", "main", "--data-dir", dir)
	keep(res)
	if !strings.Contains(res.stderr, "payment_account_exists") {
		t.Errorf("online duplicate create: stderr %q", res.stderr)
	}
	res, _ = walletCLI(t, 0, "list", "--data-dir", dir)
	keep(res)
	if !regexp.MustCompile(`^REF +ADDRESS +MAX_PER_PAYMENT +MAX_PER_DAY +CREATED\n` +
		`main +` + mainAddr + ` +1000000 +5000000 +\S+Z\n` +
		`online +` + onlineAddr + ` +7 +- +\S+Z\n` +
		`over-tcp +` + tcpAddr + ` +- +99 +\S+Z\n` +
		`spare +` + spareAddr + ` +- +- +\S+Z\n$`).MatchString(res.stdout) {
		t.Errorf("online list:\n%s", res.stdout)
	}
	var api struct {
		PaymentAccounts []struct {
			Ref, Address string
		} `json:"payment_accounts"`
	}
	outputs.Write(getJSON(t, n.url+"/v1/admin/payment-accounts", n.token, 200, &api))
	if len(api.PaymentAccounts) != 4 || api.PaymentAccounts[1].Address != onlineAddr {
		t.Errorf("the node lists %+v", api.PaymentAccounts)
	}
	n.stop(t)
	res, _ = walletCLI(t, 0, "list", "--data-dir", dir)
	if !strings.Contains(res.stdout, onlineAddr) || !strings.Contains(res.stdout, tcpAddr) {
		t.Errorf("accounts created online are gone offline:\n%s", res.stdout)
	}
	outputs.WriteString(n.stderr.String())

	// Every key is a 0600 file, and no output, log line or audit entry holds one.
	keys, err := filepath.Glob(filepath.Join(dir, "wallets", "*.key"))
	if err != nil || len(keys) != 4 {
		t.Fatalf("key files %v %v", keys, err)
	}
	all := strings.ToLower(outputs.String())
	l := openTestLog(t, dir)
	audit, err := l.AuditEntries(eventlog.AuditQuery{Limit: 1000})
	l.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		fi, err := os.Stat(k)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v %v", k, fi.Mode(), err)
		}
		b, err := os.ReadFile(k)
		if err != nil {
			t.Fatal(err)
		}
		secret := strings.TrimSpace(string(b))
		if len(secret) != 64 {
			t.Fatalf("%s holds %d characters", k, len(secret))
		}
		if strings.Contains(all, secret) {
			t.Errorf("the key of %s was printed", filepath.Base(k))
		}
		for _, e := range audit {
			if strings.Contains(strings.ToLower(string(e.Detail)), secret) {
				t.Errorf("audit %s holds a key", e.Action)
			}
		}
	}
	var created int
	for _, e := range audit {
		if e.Action == "payment_account.created" {
			created++
		}
	}
	if created != 4 {
		t.Errorf("payment_account.created audit entries = %d, want 4", created)
	}
}
