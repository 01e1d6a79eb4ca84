package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/internal/atomicfile"
)

// The problems check reports, each with exit status 1; errAnotherKey is the
// third (transparency_key.go).
var (
	errLogForked     = errors.New("the log forked")
	errLogRolledBack = errors.New("the log rolled back")
)

type checkConfig struct {
	addr        string
	tiles       string
	token       string
	state       string
	verifierKey string
	json        bool
	verbose     bool
}

// checkReport is check's result, printed as one JSON object with --json.
type checkReport struct {
	// Result is trusted (first run), consistent, unchanged, or the problem:
	// forked, rolled_back, another_key; error for any other failure.
	Result           string `json:"result"`
	Origin           string `json:"origin,omitempty"`
	VerifierKey      string `json:"verifier_key,omitempty"`
	OldSize          int64  `json:"old_size"`
	TreeSize         int64  `json:"tree_size"`
	RootHash         string `json:"root_hash,omitempty"`
	BytesTransferred int64  `json:"bytes_transferred"`
	Evidence         string `json:"evidence,omitempty"`
	Error            string `json:"error,omitempty"`
}

func (m *Main) newTransparencyCheckCommand(g *globals) *cobra.Command {
	var cfg checkConfig
	cmd := &cobra.Command{
		Use:   "check (--addr URL --token T | --tiles URL) --state FILE [--verifier-key VKEY]",
		Short: "Verify a node's signed checkpoint and that its log only grew since the last check",
		Long: `check is a monitor of a node's transparency log. Its first run fetches the node's
verifier key and checkpoint (GET /v1/transparency), verifies the checkpoint's
signature and stores both in --state. The key is trusted on first use, unless
--verifier-key pins the one to expect.

Each later run fetches only the new checkpoint (GET /v1/transparency/checkpoint)
and one consistency proof from the stored tree (GET
/v1/transparency/proof/consistency), a few kilobytes whatever the log's size,
verifies the checkpoint with the stored key and the proof, and stores the new
checkpoint. It exits 1, naming the problem, when

  the checkpoint is signed by another key    a different node, or a new key
  the log rolled back                         a smaller tree than the stored one
  the log forked                              the same size with another root, or a
                                              larger tree that does not extend the
                                              stored one

and then keeps the stored checkpoint and writes what it was served beside the
state file, in a new file FILE.evidence-<UTC time>-<problem>.json that no
later run replaces: two checkpoints of one key that disagree are proof of the
fork for anyone.

  civnode transparency check --addr https://node.example --state node.json

With --tiles URL instead of --addr, check reads a log that a static host
serves from what publish wrote: URL/checkpoint, URL/verifier-key on the first
run, and the hash tiles it needs to compute the consistency proof itself,
each checked against the new checkpoint's root. A static host takes no token.

The token, an owner or observer token, comes from --token or $CIVNODE_TOKEN.
It prints one line on success; -v adds the bytes transferred, --json prints
one JSON object instead (also on failure). Exit status: 0 consistent, 1 a
problem or any other failure, 2 a mistake on the command line.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.state == "" {
				return usageErrorf("transparency check needs --state FILE, where it keeps the last verified checkpoint")
			}
			var src checkSource
			var c *apiClient
			var err error
			if cfg.tiles != "" {
				if cmd.Flags().Changed("addr") || cmd.Flags().Changed("token") {
					return usageErrorf("give --tiles URL of a static host, or --addr and --token of a node, not both")
				}
				// A static host is public: it is sent no token.
				if c, err = newObserverClient(cfg.tiles, ""); err != nil {
					return err
				}
				src = tilesCheckSource{c}
			} else {
				token := m.observerToken(cfg.token)
				if token == "" {
					return usageErrorf("transparency check needs an owner or observer token: --token T or $%s", tokenEnv)
				}
				if c, err = newObserverClient(cfg.addr, token); err != nil {
					return err
				}
				src = nodeCheckSource{c}
			}
			defer c.close()
			rep, err := m.check(cmd.Context(), src, c.base, cfg)
			rep.BytesTransferred = c.transferred()
			return m.printCheck(cfg, c.via, rep, err)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.addr, "addr", "127.0.0.1:7777", "the node's URL, or HOST:PORT")
	f.StringVar(&cfg.tiles, "tiles", "", "check the log a static host serves at this URL prefix (what publish writes) instead of a node")
	f.StringVar(&cfg.token, "token", "", "an owner or observer token of the node (default $"+tokenEnv+")")
	f.StringVar(&cfg.state, "state", "", "file holding the verifier key and the last verified checkpoint (created by the first run, mode 0600)")
	f.StringVar(&cfg.verifierKey, "verifier-key", "", "the node's note verifier key to expect, instead of trusting the first one seen")
	f.BoolVar(&cfg.json, "json", false, "print one JSON object instead of a line")
	f.BoolVarP(&cfg.verbose, "verbose", "v", false, "also print the bytes transferred")
	return cmd
}

// check runs one check of the log src reads (at url, for the state file and
// the evidence); the report says what it found also when the error is one of
// the problems.
func (m *Main) check(ctx context.Context, src checkSource, url string, cfg checkConfig) (checkReport, error) {
	st, err := loadCheckState(cfg.state)
	if err != nil {
		return checkReport{}, err
	}
	if st == nil {
		return firstCheck(ctx, src, url, cfg)
	}
	k, stored, err := st.open()
	if err != nil {
		return checkReport{}, fmt.Errorf("%s: %w", cfg.state, err)
	}
	rep := checkReport{Origin: k.origin, VerifierKey: k.vkey, OldSize: stored.Size}
	if cfg.verifierKey != "" && cfg.verifierKey != k.vkey {
		return rep, fmt.Errorf("%s holds the key %s, not --verifier-key %s; use another state file for another key", cfg.state, k.vkey, cfg.verifierKey)
	}
	signed, err := src.checkpoint(ctx)
	if err != nil {
		return rep, err
	}
	head, err := k.openCheckpoint(signed)
	if err != nil {
		if errors.Is(err, errAnotherKey) {
			rep.Result = "another_key"
			return rep, withEvidence(cfg, url, st, signed, nil, &rep, err)
		}
		return rep, err
	}
	rep.TreeSize, rep.RootHash = head.Size, b64(head.Root)
	var proof tlog.TreeProof
	switch {
	case head.Size < stored.Size:
		rep.Result = "rolled_back"
		err = fmt.Errorf("%w: the node's checkpoint has %d events, the one stored in %s has %d", errLogRolledBack, head.Size, cfg.state, stored.Size)
	case head.Size == stored.Size && head.Root != stored.Root:
		rep.Result = "forked"
		err = fmt.Errorf("%w: the node signed a tree of %d events with root %s, and earlier one of the same size with root %s",
			errLogForked, head.Size, b64(head.Root), b64(stored.Root))
	case head.Size == stored.Size:
		rep.Result = "unchanged"
	case stored.Size == 0:
		rep.Result = "consistent" // every tree extends the empty one
	default:
		proof, err = src.consistency(ctx, stored, head)
		if err != nil {
			return rep, fmt.Errorf("fetch the consistency proof from %d to %d events: %w", stored.Size, head.Size, err)
		}
		if cerr := tlog.CheckTree(proof, head.Size, head.Root, stored.Size, stored.Root); cerr != nil {
			rep.Result = "forked"
			err = fmt.Errorf("%w: the node's tree of %d events does not extend the tree of %d events stored in %s (%v)",
				errLogForked, head.Size, stored.Size, cfg.state, cerr)
		} else {
			rep.Result = "consistent"
		}
	}
	if err != nil {
		return rep, withEvidence(cfg, url, st, signed, proof, &rep, err)
	}
	return rep, saveCheckState(cfg.state, checkState{VerifierKey: k.vkey, Checkpoint: string(signed), URL: url})
}

// firstCheck trusts the node's key on first use, or checks it against
// --verifier-key, and stores the verified checkpoint.
func firstCheck(ctx context.Context, src checkSource, url string, cfg checkConfig) (checkReport, error) {
	var vkey string
	var signed []byte
	var err error
	if cfg.verifierKey != "" {
		vkey = cfg.verifierKey
		signed, err = src.checkpoint(ctx)
	} else {
		vkey, signed, err = src.first(ctx)
	}
	if err != nil {
		return checkReport{}, err
	}
	k, err := parseCivnodeKey(vkey)
	if err != nil {
		return checkReport{}, err
	}
	rep := checkReport{Origin: k.origin, VerifierKey: vkey}
	head, err := k.openCheckpoint(signed)
	if errors.Is(err, errAnotherKey) {
		rep.Result = "another_key"
	}
	if err != nil {
		return rep, err
	}
	rep.Result, rep.TreeSize, rep.RootHash = "trusted", head.Size, b64(head.Root)
	return rep, saveCheckState(cfg.state, checkState{VerifierKey: vkey, Checkpoint: string(signed), URL: url})
}

// printCheck prints the report, a line or a JSON object, and returns the
// error that makes the exit status.
func (m *Main) printCheck(cfg checkConfig, via string, rep checkReport, err error) error {
	if err != nil && rep.Result == "" {
		rep.Result = "error"
	}
	if err != nil {
		rep.Error = err.Error()
	}
	if cfg.json {
		enc := json.NewEncoder(m.Stdout)
		if perr := enc.Encode(rep); perr != nil && err == nil {
			return fmt.Errorf("print the report: %w", perr)
		}
		return err
	}
	if err != nil {
		if cfg.verbose {
			fmt.Fprintf(m.Stderr, "%d bytes transferred\n", rep.BytesTransferred)
		}
		return fmt.Errorf("transparency check of %s: %w", via, err)
	}
	line := checkSummaryLine(rep)
	if cfg.verbose {
		line += fmt.Sprintf(" (%d bytes transferred)", rep.BytesTransferred)
	}
	_, perr := fmt.Fprintln(m.Stdout, line)
	return perr
}

func checkSummaryLine(rep checkReport) string {
	switch rep.Result {
	case "trusted":
		return fmt.Sprintf("trusted %s on first use: tree size %d, root %s; key %s stored", rep.Origin, rep.TreeSize, rep.RootHash, rep.VerifierKey)
	case "unchanged":
		return fmt.Sprintf("unchanged: %s tree size %d, root %s", rep.Origin, rep.TreeSize, rep.RootHash)
	default:
		return fmt.Sprintf("consistent: %s tree size %d → %d, root %s", rep.Origin, rep.OldSize, rep.TreeSize, rep.RootHash)
	}
}

// checkState is the state file: the trusted key and the last checkpoint it
// verified. url and checked_at are for people; check reads neither.
type checkState struct {
	VerifierKey string `json:"verifier_key"`
	Checkpoint  string `json:"checkpoint"`
	URL         string `json:"url,omitempty"`
	CheckedAt   string `json:"checked_at,omitempty"`
}

// open verifies the stored checkpoint with the stored key: a state file
// edited by hand must not become the start of the next check.
func (s *checkState) open() (civnodeKey, eventlog.TreeHead, error) {
	k, err := parseCivnodeKey(s.VerifierKey)
	if err != nil {
		return civnodeKey{}, eventlog.TreeHead{}, err
	}
	head, err := k.openCheckpoint([]byte(s.Checkpoint))
	if err != nil {
		return civnodeKey{}, eventlog.TreeHead{}, fmt.Errorf("the stored checkpoint: %w", err)
	}
	return k, head, nil
}

// withEvidence writes what the node served when check found a problem, in a
// new file next to the state file, and adds its name to err.
func withEvidence(cfg checkConfig, url string, st *checkState, served []byte, proof tlog.TreeProof, rep *checkReport, err error) error {
	now := time.Now().UTC()
	ev := struct {
		Problem          string      `json:"problem"`
		DetectedAt       string      `json:"detected_at"`
		URL              string      `json:"url"`
		VerifierKey      string      `json:"verifier_key"`
		StoredCheckpoint string      `json:"stored_checkpoint"`
		ServedCheckpoint string      `json:"served_checkpoint"`
		ConsistencyProof []tlog.Hash `json:"consistency_proof,omitempty"`
		Error            string      `json:"error"`
	}{rep.Result, now.Format(time.RFC3339), url, st.VerifierKey, st.Checkpoint, string(served), proof, err.Error()}
	b, merr := json.MarshalIndent(ev, "", "  ")
	if merr != nil {
		return fmt.Errorf("%w (and its evidence could not be encoded: %v)", err, merr)
	}
	path, werr := writeEvidenceFile(cfg.state, rep.Result, now, append(b, '\n'))
	if werr != nil {
		return fmt.Errorf("%w (and its evidence could not be written: %v)", err, werr)
	}
	rep.Evidence = path
	return fmt.Errorf("%w; what the node served is in %s", err, path)
}

// evidenceMaxTries bounds the names writeEvidenceFile tries for one
// detection: the time's own, then -2, -3, … for detections in the same second.
const evidenceMaxTries = 1000

// writeEvidenceFile writes one piece of evidence in a file of its own beside
// the state file, STATE.evidence-<UTC time>-<problem>.json, mode 0600, and
// returns its path. It never replaces a file: earlier evidence is what proves
// a fork, so every detection adds one (a fork, then a rollback, leaves both).
// The file is written and synced under a temporary name, then linked to its
// name, which fails rather than replaces when the name is taken: a reader
// sees the whole record or none, and a crash leaves at most a stray temporary
// file.
func writeEvidenceFile(state, problem string, at time.Time, data []byte) (string, error) {
	dir := filepath.Dir(state)
	tmp, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(state)+".evidence-*")
	if err != nil {
		return "", fmt.Errorf("write the evidence: %w", err)
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName)
	if err := writeSynced(tmp, data, 0o600); err != nil {
		return "", fmt.Errorf("write the evidence: %w", err)
	}
	base := state + ".evidence-" + at.UTC().Format("20060102T150405Z") + "-" + problem
	for i := 1; i <= evidenceMaxTries; i++ {
		path := base + ".json"
		if i > 1 {
			path = fmt.Sprintf("%s-%d.json", base, i)
		}
		err := os.Link(tmpName, path)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("write the evidence %s: %w", path, err)
		}
		if err := atomicfile.SyncDir(dir); err != nil {
			return "", fmt.Errorf("write the evidence %s: %w", path, err)
		}
		return path, nil
	}
	return "", fmt.Errorf("write the evidence: %d files named %s* exist already", evidenceMaxTries, base)
}

// loadCheckState reads the state file, nil when there is none yet.
func loadCheckState(path string) (*checkState, error) {
	b, err := readOptionalFile(path)
	if err != nil || b == nil {
		return nil, err
	}
	var st checkState
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return nil, fmt.Errorf("read the state file %s: %w", path, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("read the state file %s: more than one JSON object", path)
	}
	return &st, nil
}

func saveCheckState(path string, st checkState) error {
	st.CheckedAt = time.Now().UTC().Format(time.RFC3339)
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encode the state: %w", err)
	}
	return writeStateFile(path, append(b, '\n'))
}
