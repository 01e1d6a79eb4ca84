package main

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/civnode/civnode/commands/servicenet"
)

// The statuses of a doctor check. Only fail changes the exit status: a
// warning is something the operator should know that does not stop the node
// from working, and skip is a check that could not run because of a problem
// reported by an earlier one.
const (
	statusOK   = "ok"
	statusWarn = "warn"
	statusFail = "fail"
	statusSkip = "skip"
)

// doctorCheck is one line of the report. Fix, for a problem, is what to do
// about it, as a command where there is one. Nothing in a check is secret:
// keys, tokens and credentials are judged, never printed.
type doctorCheck struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// doctorReport is what doctor prints, as text or with --json as one object.
type doctorReport struct {
	DataDir     string        `json:"data_dir"`
	Addr        string        `json:"addr"`
	RegistryURL string        `json:"registry_url"`
	Status      string        `json:"status"` // the worst status of any check: ok, warn or fail
	Failed      int           `json:"failed"`
	Warnings    int           `json:"warnings"`
	Checks      []doctorCheck `json:"checks"`
}

// doctorConfig is doctor's command line.
type doctorConfig struct {
	dataDir     string
	addr        string
	registryURL string
	json        bool
}

func (m *Main) newDoctorCommand(g *globals) *cobra.Command {
	var cfg doctorConfig
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check a node's data dir, chain, port and registry, and say how to fix what is wrong",
		Long: `doctor checks what a node needs, one line per check, and for each problem
prints what to do about it:

  data_dir             exists, is a directory, mode 0700, owned by you
  db                   the event log's database is there
  node_key             node.key: mode 0600, owned by you, an Ed25519 key
  control_token        control.token: mode 0600, owned by you, one token line
  registry_credential  registry.credential, if there: mode 0600, one line
  wallets              wallets/*.key, if any: mode 0600, valid keys
  disk                 free space where the data dir is
  chain                the chain verifies from the last full verify to the tip
  read_models          the read models are the tip's, in this version's layout
  node                 a running node answers, is healthy and takes control.token
  port                 --addr is free, or served by this data dir's node
  registry             --registry-url answers GET /v1/agents within 5 s;
                       with --registry-url "" (no registry) it says so and passes

The chain check starts where the last civnode verify --data-dir ended, which
it recorded in the store: the event there must be unchanged, and every event
after it, and the genesis event, must verify. Without such a record it checks
the newest 4096 events and the genesis event. While a node runs it holds the
store; doctor then asks the node instead, over control.sock, or over TCP at
--addr once the node there has proved it holds node.key.

doctor records nothing in the store (no event, audit entry or checkpoint),
and never prints a key, token or credential. A registry that cannot be
reached is a warning: the node runs without it, and only the registry routes
fail.

Exit status: 0 when no check failed (warnings allowed), 1 when one did, 2 a
mistake on the command line. --json prints the report as one JSON object
(docs/doctor.md).`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger, err := m.logger(g)
			if err != nil {
				return err
			}
			return m.doctor(cmd.Context(), cfg, logger)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.dataDir, "data-dir", "", dataDirHelp)
	f.StringVar(&cfg.addr, "addr", "127.0.0.1:7777", "the node's listen address HOST:PORT, as given to serve")
	f.StringVar(&cfg.registryURL, "registry-url", DefaultRegistryURL, "the agent registry the node proxies (`URL`; \"\": none), as given to serve")
	f.BoolVar(&cfg.json, "json", false, "print the report as one JSON object")
	return cmd
}

// doctor runs every check and prints the report; a failed check makes it
// return a reportedError, so that the exit status is 1.
func (m *Main) doctor(ctx context.Context, cfg doctorConfig, logger *slog.Logger) error {
	addr, err := hostPort(cfg.addr)
	if err != nil {
		return usageErrorf("--addr %q: %w", cfg.addr, err)
	}
	// The client checks the URL as serve does; the signer is never called here.
	if cfg.registryURL != "" {
		if _, err := servicenet.New(servicenet.Config{BaseURL: cfg.registryURL, Sign: func([]byte) []byte { return nil }}); err != nil {
			return usageErrorf("--registry-url: %w", err)
		}
	}
	dir, err := m.resolveDataDir(cfg.dataDir)
	if err != nil {
		return err
	}
	d := &doctorRun{m: m, dir: dir, addr: addr, registryURL: cfg.registryURL, logger: logger}
	checks, err := d.run(ctx)
	if err != nil {
		return err
	}
	rep := newDoctorReport(dir, addr, cfg.registryURL, checks)
	if cfg.json {
		enc := json.NewEncoder(m.Stdout)
		enc.SetEscapeHTML(false)
		err = enc.Encode(rep)
	} else {
		err = rep.writeText(m.Stdout)
	}
	if err != nil {
		return fmt.Errorf("print report: %w", err)
	}
	if rep.Failed > 0 {
		return &reportedError{fmt.Errorf("doctor: %d checks failed", rep.Failed)}
	}
	return nil
}

// doctorRun holds what one check finds for the checks after it.
type doctorRun struct {
	m           *Main
	dir         dataDir
	addr        string
	registryURL string
	logger      *slog.Logger

	dirExists  bool
	key        ed25519.PrivateKey // nil when node.key cannot be read
	keySkip    string             // why key is nil, for the checks it skips
	credential string             // registry.credential, trimmed; "" when absent
	inUse      bool               // another process holds the store: a running node
}

// run makes every check in the order the report lists them.
func (d *doctorRun) run(ctx context.Context) ([]doctorCheck, error) {
	var checks []doctorCheck
	add := func(cs ...doctorCheck) { checks = append(checks, cs...) }
	add(d.checkDataDir())
	add(d.checkDB())
	add(d.checkNodeKey())
	add(d.checkControlToken())
	add(d.checkRegistryCredential())
	add(d.checkWallets()...)
	// The registry is the slowest check when it does not answer; it runs
	// while the others do, with what it needs from the checks above.
	registry := make(chan doctorCheck, 1)
	go func() { registry <- d.checkRegistry(ctx) }()
	add(d.checkDisk())
	add(d.checkStore(ctx)...)
	add(d.checkRunningNode(ctx)...)
	add(d.checkPort(ctx))
	add(<-registry)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return checks, nil
}

func newDoctorReport(dir dataDir, addr, registryURL string, checks []doctorCheck) doctorReport {
	rep := doctorReport{DataDir: string(dir), Addr: addr, RegistryURL: registryURL, Status: statusOK, Checks: checks}
	for _, c := range checks {
		switch c.Status {
		case statusFail:
			rep.Failed++
			rep.Status = statusFail
		case statusWarn:
			rep.Warnings++
			if rep.Status == statusOK {
				rep.Status = statusWarn
			}
		}
	}
	return rep
}

// writeText prints one line per check, a fix under each problem, and a
// summary line.
func (rep doctorReport) writeText(w io.Writer) error {
	if _, err := fmt.Fprintf(w, "civnode doctor: data dir %s, addr %s, registry %s\n", rep.DataDir, rep.Addr, registryLabel(rep.RegistryURL)); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range rep.Checks {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", statusLabel(c.Status), c.Name, c.Detail)
		if c.Fix != "" {
			fmt.Fprintf(tw, "\t\tfix: %s\n", c.Fix)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var summary string
	switch {
	case rep.Failed > 0:
		summary = fmt.Sprintf("%s failed, %s: see the fixes above", plural(rep.Failed, "check"), plural(rep.Warnings, "warning"))
	case rep.Warnings > 0:
		summary = fmt.Sprintf("no check failed, %s: see above", plural(rep.Warnings, "warning"))
	default:
		summary = "every check passed"
	}
	_, err := fmt.Fprintln(w, summary)
	return err
}

// statusLabel is a status as the text report shows it: a failure in capitals,
// so that it stands out in a column of oks.
func statusLabel(s string) string {
	if s == statusFail {
		return "FAIL"
	}
	return s
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// shellQuote quotes a path for a fix the operator may paste into a shell.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:@,=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
