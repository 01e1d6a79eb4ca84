package doctor

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"text/tabwriter"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/transparency"
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

// Check is one line of the report. Fix, for a problem, is what to do
// about it, as a command where there is one. Nothing in a check is secret:
// keys, tokens and credentials are judged, never printed.
type Check struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// Report is what doctor found: the checks, and a summary of their statuses.
type Report struct {
	DataDir     string  `json:"data_dir"`
	Addr        string  `json:"addr"`
	RegistryURL string  `json:"registry_url"`
	Status      string  `json:"status"` // the worst status of any check: ok, warn or fail
	Failed      int     `json:"failed"`
	Warnings    int     `json:"warnings"`
	Checks      []Check `json:"checks"`
}

// Options are what doctor checks besides the data dir, and how it reaches a
// running node.
type Options struct {
	// Addr is the node's listen address, host:port, as given to serve.
	Addr string
	// RegistryURL is the agent registry the node proxies: a valid URL, or
	// "" for a node without one.
	RegistryURL string
	// Logger is the command's logger; doctor itself logs nothing to it.
	Logger *slog.Logger
	// Progress, if set, draws a bar while the chain is verified: it returns
	// the callback for the seq reached (nil for no bar) and a function that
	// removes the bar.
	Progress func(desc string, total int64) (func(seq uint64), func())
	// Reach opens the owner's way to the node running on dir: its control
	// socket, or TCP at addr once the node there has proved it holds
	// node.key. Its Node sends the owner token with every request.
	Reach func(ctx context.Context, dir datadir.Dir, addr string) (Node, error)
	// Prove has the process at the other end of conn, dialled at addr,
	// prove that it holds the key of pub; the Node it returns uses conn
	// only, and sends token (if not "") with the requests that ask for it.
	// On an error the caller closes conn.
	Prove func(ctx context.Context, conn net.Conn, addr string, pub ed25519.PublicKey, token string) (Node, error)
}

// Node is a client of a running node's API.
type Node interface {
	// Get makes one GET of path, with the owner token when owner is set,
	// and returns the status and at most 1 MiB of the body.
	Get(ctx context.Context, path string, owner bool) (status int, body []byte, err error)
	// Via says how the node was reached, for the report: the socket path or
	// HOST:PORT.
	Via() string
	Close()
}

// Run makes every check of the node in dir, in the order the report lists
// them. It returns an error only when ctx ends; a failed check is in the
// report.
func Run(ctx context.Context, dir datadir.Dir, opts Options) (Report, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Progress == nil {
		opts.Progress = func(string, int64) (func(uint64), func()) { return nil, func() {} }
	}
	d := &checker{opts: opts, dir: dir, addr: opts.Addr, registryURL: opts.RegistryURL, logger: opts.Logger}
	checks, err := d.all(ctx)
	if err != nil {
		return Report{}, err
	}
	return newReport(dir, opts.Addr, opts.RegistryURL, checks), nil
}

// checker holds what one check finds for the checks after it.
type checker struct {
	opts        Options
	dir         datadir.Dir
	addr        string
	registryURL string
	logger      *slog.Logger

	dirExists  bool
	key        ed25519.PrivateKey // nil when node.key cannot be read
	origin     *transparency.Key  // a mirror's pinned origin key (origin.vkey); nil in a node's dir
	mirror     bool               // the dir is a mirror's: origin.vkey and no node.key
	keySkip    string             // why key and origin are nil, for the checks they skip
	credential string             // registry.credential, trimmed; "" when absent
	inUse      bool               // another process holds the store: a running node
}

// all makes every check in the order the report lists them.
func (d *checker) all(ctx context.Context) ([]Check, error) {
	var checks []Check
	add := func(cs ...Check) { checks = append(checks, cs...) }
	add(d.checkDataDir())
	add(d.checkDB())
	if d.mirror = d.dirExists && d.dir.IsMirror(); d.mirror {
		add(d.checkOriginKey())
	} else {
		add(d.checkNodeKey())
	}
	add(d.checkControlToken())
	add(d.checkRegistryCredential())
	add(d.checkWallets()...)
	// The registry is the slowest check when it does not answer; it runs
	// while the others do, with what it needs from the checks above.
	registry := make(chan Check, 1)
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

func newReport(dir datadir.Dir, addr, registryURL string, checks []Check) Report {
	rep := Report{DataDir: string(dir), Addr: addr, RegistryURL: registryURL, Status: statusOK, Checks: checks}
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

// WriteJSON prints the report as one JSON object on a line.
func (rep Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(rep)
}

// WriteText prints one line per check, a fix under each problem, and a
// summary line.
func (rep Report) WriteText(w io.Writer) error {
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

// registryLabel names the registry in the report's header: "none" for a
// node without one.
func registryLabel(url string) string {
	if url == "" {
		return "none"
	}
	return url
}
