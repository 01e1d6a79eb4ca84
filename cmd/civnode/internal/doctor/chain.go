package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/internal/logkey"
	"github.com/civnode/civnode/projections"
)

// tailWindow is how many of the newest events doctor verifies when no
// full verify was ever recorded: four times what serve checks when it opens
// the log, and a fraction of a second of Ed25519 verifies on one core.
const tailWindow = 4096

// serveTailCheck is what serve verifies of its chain when it starts
// (eventlog.Options.TailCheck's default), for the report on a running node.
const serveTailCheck = 1024

// netTimeout bounds each network check: the running node, the port and
// the registry.
const netTimeout = 5 * time.Second

// chainFix is what to do about a chain that does not verify or a store that
// cannot be read (docs/verifying.md §5).
func (d *checker) chainFix() string {
	if d.mirror {
		return "keep " + shellQuote(string(d.dir)) + " as it is for inspection and restore the mirror from a backup " +
			"into a new data dir (civnode restore BACKUP --data-dir NEW), or mirror the origin again into a new one " +
			"(civnode mirror --from URL --data-dir NEW; docs/mirrors.md); never delete a file the message names"
	}
	return "keep " + shellQuote(string(d.dir)) + " as it is for inspection and restore the data dir from a backup " +
		"into a new one (civnode restore BACKUP --data-dir NEW), or rebuild it from an export you trust " +
		"(civnode import BUNDLE --key node.key --data-dir NEW; docs/operations.md); never delete a file the message names"
}

// checkStore opens the event log of a stopped node and checks its chain and
// read models. It returns nil when the store is held by another process, a
// running node: checkRunningNode asks the node instead.
func (d *checker) checkStore(ctx context.Context) []Check {
	chain := Check{Name: "chain"}
	models := Check{Name: "read_models"}
	switch {
	case !d.dirExists:
		return []Check{skipped(chain, "no data dir"), skipped(models, "no data dir")}
	}
	key, ok := d.chainKey()
	if !ok {
		return []Check{skipped(chain, d.keySkip), skipped(models, d.keySkip)}
	}
	if fi, err := os.Stat(d.dir.DBPath()); err != nil || !fi.IsDir() {
		return []Check{skipped(chain, "no event log"), skipped(models, "no event log")}
	}
	// Read-only first: opening the log on a store without a chain would
	// start a new one with a genesis event, and doctor records nothing.
	did, err := eventlog.ChainNodeDID(d.dir.DBPath())
	switch {
	case datadir.IsLockHeld(err):
		d.inUse = true
		return nil
	case err != nil:
		fix := ""
		var ce *eventlog.ChainError
		if errors.As(err, &ce) {
			fix = d.chainFix()
		}
		return []Check{problem(chain, statusFail, fmt.Sprintf("open event log in %s: %v", d.dir.DBPath(), err), fix),
			skipped(models, "the event log does not open")}
	case did == "" && d.mirror:
		return []Check{problem(chain, statusFail, d.dir.DBPath()+" holds no chain: the mirror has stored none of the origin's events yet",
			"run civnode mirror --from URL --data-dir "+shellQuote(string(d.dir))+" (or serve --mirror-of URL) to copy the origin's chain"),
			skipped(models, "no chain")}
	case did == "":
		return []Check{problem(chain, statusFail, d.dir.DBPath()+" holds no chain, not even a genesis event",
			"restore db/ from a backup; for a new node, remove the empty "+shellQuote(d.dir.DBPath())+" and start civnode serve"),
			skipped(models, "no chain")}
	case d.mirror && did != d.origin.DID:
		return []Check{problem(chain, statusFail, fmt.Sprintf("%s holds the chain of %s, but origin.vkey pins the origin %s", d.dir.DBPath(), did, d.origin.DID),
			d.originFix()), skipped(models, "the chain is not the pinned origin's")}
	}
	l, err := d.dir.OpenChainLog(key, d.logger, eventlog.Options{})
	if errors.Is(err, datadir.ErrInUse) {
		d.inUse = true
		return nil
	}
	if err != nil {
		var ce *eventlog.ChainError
		fix := d.chainFix()
		if !errors.As(err, &ce) {
			fix = ""
			if errors.Is(err, eventlog.ErrWrongKey) {
				fix = "restore the node.key this chain was created with to " + shellQuote(d.dir.KeyPath())
			}
		}
		return []Check{
			problem(chain, statusFail, err.Error(), fix),
			skipped(models, "the event log does not open"),
		}
	}
	defer func() {
		if err := l.Close(); err != nil {
			d.logger.Warn("close event log", logkey.Err, err)
		}
	}()
	return []Check{d.verifyChain(ctx, l), d.checkModels(l)}
}

// verifyChain checks the chain from the recorded checkpoint to the tip, or
// the newest tailWindow events when there is none.
func (d *checker) verifyChain(ctx context.Context, l *eventlog.Log) Check {
	c := Check{Name: "chain"}
	tip := l.Tip()
	cp, haveCP, cpErr := l.VerifiedMark()
	start := time.Now()
	progress, done := d.opts.Progress("doctor", int64(tip.Seq))
	var rep eventlog.VerifyReport
	var err error
	if haveCP {
		rep, err = l.VerifySince(ctx, cp, progress)
	} else {
		from := uint64(1)
		if tip.Seq > tailWindow {
			from = tip.Seq - tailWindow + 1
		}
		rep, err = l.VerifyFrom(ctx, from, progress)
	}
	done()
	took := elapsed(start)
	if err != nil {
		var ce *eventlog.ChainError
		if errors.As(err, &ce) {
			return problem(c, statusFail, ce.Error(), d.chainFix())
		}
		return problem(c, statusFail, fmt.Sprintf("verify the chain: %v", err), "")
	}

	var parts []string
	status, fix := statusOK, ""
	verifyCmd := "civnode verify --data-dir " + shellQuote(string(d.dir))
	switch {
	case haveCP:
		when := cp.VerifiedAt.Format(time.RFC3339)
		if n := rep.Events - cp.Seq; n > 0 {
			parts = append(parts, fmt.Sprintf("sound: seq %d is unchanged since the full verify of %s, and the %s after it and the genesis event verify (%s)",
				cp.Seq, when, plural(int(n), "event"), took))
		} else {
			parts = append(parts, fmt.Sprintf("sound: seq %d, the tip, is unchanged since the full verify of %s, and the genesis event verifies (%s)",
				cp.Seq, when, took))
		}
	case rep.From == 1:
		parts = append(parts, fmt.Sprintf("sound: every event verifies, genesis to tip (%s, %s)", plural(int(rep.Events), "event"), took))
	default:
		status = statusWarn
		parts = append(parts, fmt.Sprintf("the genesis event and the newest %d events (seq %d..%d) verify (%s), but no full verify was ever recorded, so the older events were not read",
			rep.Events-rep.From+1, rep.From, rep.Events, took))
		fix = "with the node stopped, run " + verifyCmd + ": it reads every event, and doctor starts from where it ended next time"
	}
	if cpErr != nil {
		status = statusWarn
		parts = append(parts, fmt.Sprintf("the recorded checkpoint cannot be used (%v)", cpErr))
		fix = "with the node stopped, run " + verifyCmd + ", which records a new one"
	}
	parts = append(parts, fmt.Sprintf("tip seq %d %.12s…", rep.Events, rep.TipHash))
	if t := l.TornTail(); t != nil {
		// Opening the store recovered it, as serve would have; the dropped
		// write was never acknowledged, so nothing is lost. The operator
		// should still know that the node stopped in mid-write.
		status = statusWarn
		parts = append(parts, t.Error())
		if fix == "" {
			fix = "nothing to repair; find out why the node stopped (a crash or kill -9) in its log"
		}
	}
	return problem(c, status, strings.Join(parts, "; "), fix)
}

// checkModels compares the read models' watermark and layout with the tip
// and this binary, which says what the node's next start will do.
func (d *checker) checkModels(l *eventlog.Log) Check {
	c := Check{Name: "read_models"}
	tip := l.Tip().Seq
	version, applied, err := l.ModelsState()
	replay := "civnode replay --data-dir " + shellQuote(string(d.dir))
	switch {
	case err != nil:
		var ce *eventlog.ChainError
		if errors.As(err, &ce) {
			return problem(c, statusFail, fmt.Sprintf("cannot read the read models' state: %v", err), d.chainFix())
		}
		return problem(c, statusFail, fmt.Sprintf("cannot read the read models' state: %v", err), "")
	case applied > tip:
		return problem(c, statusFail, fmt.Sprintf("they hold events up to seq %d, the chain ends at seq %d: they were not written with this chain", applied, tip),
			"with the node stopped, "+replay+" rebuilds them from the chain")
	case version == "":
		return problem(c, statusWarn, fmt.Sprintf("none yet: the next start builds them from the chain (%s)", plural(int(tip), "event")),
			"nothing to do; or, with the node stopped, "+replay+" builds them now")
	case version != nodeModels.Version():
		return problem(c, statusWarn, fmt.Sprintf("layout %q, this civnode's is %q: the next start rebuilds them from the chain (%s) before it serves",
			version, nodeModels.Version(), plural(int(tip), "event")),
			"nothing to do; or, with the node stopped, "+replay+" rebuilds them now")
	case applied < tip:
		c.Status, c.Detail = statusOK, fmt.Sprintf("layout %q, up to seq %d of %d: the next start folds the %s behind", version, applied, tip, plural(int(tip-applied), "event"))
	default:
		c.Status, c.Detail = statusOK, fmt.Sprintf("layout %q, up to the tip (seq %d)", version, tip)
	}
	return c
}

// checkRunningNode reports the node when it is stopped, and otherwise asks it,
// since it holds the store: its health, the tip and whether it takes
// control.token. It returns the chain and read_models checks as well when
// the node runs, in their place in the report.
func (d *checker) checkRunningNode(ctx context.Context) []Check {
	node := Check{Name: "node"}
	_, haveKey := d.chainKey()
	if !d.inUse {
		if !d.dirExists || !haveKey {
			return []Check{skipped(node, "no node here")}
		}
		node.Status, node.Detail = statusOK, "not running; the store is free"
		return []Check{node}
	}
	chain := Check{Name: "chain"}
	models := skipped(Check{Name: "read_models"}, "the running node holds them; it brought them to the tip when it started")
	ctx, cancel := context.WithTimeout(ctx, netTimeout)
	defer cancel()
	ch, err := d.opts.Reach(ctx, d.dir, d.addr)
	if err != nil {
		return []Check{
			skipped(chain, "the store is in use and no node of this data dir answers"),
			models,
			problem(node, statusFail, fmt.Sprintf("the store is in use, but no node of this data dir answers: %v", err),
				"if a node runs, give its address with --addr; otherwise another civnode command (verify, replay, export) holds the store: let it finish"),
		}
	}
	defer ch.Close()

	status, body, err := ch.Get(ctx, "/v1/health", true)
	var health struct {
		Status string `json:"status"`
	}
	if err == nil {
		err = json.Unmarshal(body, &health)
	}
	if err != nil {
		return []Check{
			skipped(chain, "the running node does not answer"),
			models,
			problem(node, statusFail, fmt.Sprintf("the node at %s does not answer GET /v1/health: %v", ch.Via(), err), "look for the cause in the node's log, and restart it"),
		}
	}
	healthy := status == http.StatusOK && health.Status == "ok"

	var state struct {
		Identity struct {
			NodeDID string `json:"node_did"`
		} `json:"identity"`
		Chain struct {
			Seq     uint64 `json:"seq"`
			TipHash string `json:"tip_hash"`
		} `json:"chain"`
	}
	stStatus, stBody, stErr := ch.Get(ctx, "/v1/state", true)
	if stErr == nil && stStatus == http.StatusOK {
		stErr = json.Unmarshal(stBody, &state)
	}
	var out []Check
	switch {
	case !healthy:
		out = append(out, problem(chain, statusWarn, "not checked: the running node reports that it takes no more writes (see node)", ""),
			models, problem(node, statusFail,
				fmt.Sprintf("running (reached at %s), but GET /v1/health answers %d %q: its event log takes no more writes, after a failed fsync or a read that met a damaged block; its log says which", ch.Via(), status, health.Status),
				"stop the node, run civnode verify --data-dir "+shellQuote(string(d.dir))+", fix the cause (disk space, a damaged store: docs/verifying.md §5) and start it again"))
		return out
	case stErr != nil:
		return append(out, skipped(chain, "GET /v1/state failed"), models,
			problem(node, statusFail, fmt.Sprintf("running and healthy (reached at %s), but GET /v1/state failed: %v", ch.Via(), stErr), ""))
	case stStatus == http.StatusUnauthorized:
		return append(out, skipped(chain, "the node refuses control.token"), models,
			problem(node, statusFail, fmt.Sprintf("running and healthy (reached at %s), but it refuses the owner token in %s (401): the file changed since the node started", ch.Via(), d.dir.TokenPath()),
				"restore the token the node started with, or restart the node so that it reads control.token again"))
	case stStatus != http.StatusOK:
		return append(out, skipped(chain, "GET /v1/state failed"), models,
			problem(node, statusFail, fmt.Sprintf("running and healthy (reached at %s), but GET /v1/state answers %d", ch.Via(), stStatus), "look for the cause in the node's log"))
	}
	switch want := d.chainDID(); {
	case want == "" || state.Identity.NodeDID == want:
	case d.mirror:
		return append(out, skipped(chain, "the mirror is not of the pinned origin"), models,
			problem(node, statusFail, fmt.Sprintf("the mirror at %s serves the chain of %s, but origin.vkey pins the origin %s", ch.Via(), state.Identity.NodeDID, want),
				"restart the mirror so that it reads origin.vkey again, or restore the origin.vkey it runs with"))
	default:
		return append(out, skipped(chain, "the node is not this data dir's"), models,
			problem(node, statusFail, fmt.Sprintf("the node at %s is %s, but node.key is the key of %s", ch.Via(), state.Identity.NodeDID, want),
				"restart the node so that it reads node.key again, or restore the node.key it runs with"))
	}
	chain.Status = statusOK
	chain.Detail = fmt.Sprintf("checked by the running node when it started (the genesis event and its newest %d events), and no read has met damage since (GET /v1/health ok); tip seq %d %.12s…",
		serveTailCheck, state.Chain.Seq, state.Chain.TipHash)
	node.Status = statusOK
	node.Detail = fmt.Sprintf("running, reached at %s: healthy, takes control.token, node %s", ch.Via(), state.Identity.NodeDID)
	if d.mirror {
		node.Detail = fmt.Sprintf("a mirror running, reached at %s: healthy, takes control.token, serves the chain of %s", ch.Via(), state.Identity.NodeDID)
	}
	return append(out, chain, models, node)
}

// elapsed is the time since start for a report: milliseconds, never "0s".
func elapsed(start time.Time) string {
	d := time.Since(start)
	if d < time.Millisecond {
		return "<1ms"
	}
	return d.Round(time.Millisecond).String()
}

// nodeModels is the folder a node opens its log with (cmd/core): its
// Version is the layout a node's read models have.
var nodeModels = projections.Folder{State: true}
