package doctor

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/commands/servicenet"
	"github.com/civnode/civnode/eventlog"
)

// The file checks: the data dir and the secrets in it (cmd/civnode/doc.go
// lists them). Secrets are read with a logger that discards, since their
// modes are reported here and datadir.ReadSecret would warn on stderr as well.

func (d *checker) quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

func (d *checker) checkDataDir() Check {
	c := Check{Name: "data_dir"}
	path := string(d.dir)
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return problem(c, statusFail, fmt.Sprintf("%s does not exist: no node here yet", path),
			"civnode serve --data-dir "+shellQuote(path)+" creates it, or give the node's dir with --data-dir")
	case err != nil:
		return problem(c, statusFail, fmt.Sprintf("cannot inspect %s: %v", path, err), "")
	case !fi.IsDir():
		return problem(c, statusFail, fmt.Sprintf("%s is not a directory", path), "give the node's data dir with --data-dir")
	}
	d.dirExists = true
	perm := fi.Mode().Perm()
	if p := ownerProblem(c, path, fi); p != nil {
		return *p
	}
	switch {
	case perm&0o022 != 0:
		// control.sock is trusted because only the owner can put a file
		// here (the path is the proof); a dir others may write breaks that.
		return problem(c, statusFail, fmt.Sprintf("%s has mode %04o: group or others may write in it, and could plant a control.sock or replace a key", path, perm),
			"chmod 700 "+shellQuote(path))
	case perm&0o077 != 0:
		return problem(c, statusWarn, fmt.Sprintf("%s has mode %04o: group or others may read the chain, audit log and token hashes in it", path, perm),
			"chmod 700 "+shellQuote(path))
	case perm != 0o700:
		return problem(c, statusWarn, fmt.Sprintf("%s has mode %04o, not the 0700 serve creates", path, perm),
			"chmod 700 "+shellQuote(path))
	}
	c.Status, c.Detail = statusOK, fmt.Sprintf("%s, mode 0700, owned by you", path)
	return c
}

func (d *checker) checkDB() Check {
	c := Check{Name: "db"}
	if !d.dirExists {
		return skipped(c, "no data dir")
	}
	fi, err := os.Stat(d.dir.DBPath())
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return problem(c, statusFail, fmt.Sprintf("%s is missing: this dir holds no event log", d.dir.DBPath()),
			"civnode serve --data-dir "+shellQuote(string(d.dir))+" creates one for a new node; for an existing node, restore db/ from a backup")
	case err != nil:
		return problem(c, statusFail, fmt.Sprintf("cannot inspect %s: %v", d.dir.DBPath(), err), "")
	case !fi.IsDir():
		return problem(c, statusFail, fmt.Sprintf("%s is not a directory", d.dir.DBPath()), "restore db/ from a backup")
	}
	c.Status, c.Detail = statusOK, d.dir.DBPath()+" is there"
	return c
}

func (d *checker) checkNodeKey() Check {
	c := Check{Name: "node_key"}
	if !d.dirExists {
		return skipped(c, "no data dir")
	}
	path := d.dir.KeyPath()
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		d.keySkip = "node.key is missing"
		lost := d.dir.RefuseLostKey()
		switch {
		case errors.Is(lost, datadir.ErrInUse):
			return problem(c, statusFail, path+" is missing, and a running node holds the data dir: the key it signs with is only in its memory now",
				"restore node.key from a backup to "+shellQuote(path)+" before the node stops; it cannot start again without it")
		case lost != nil:
			return problem(c, statusFail, lost.Error(), "restore node.key from a backup to "+shellQuote(path))
		}
		return problem(c, statusFail, path+" is missing: no node here yet",
			"civnode serve --data-dir "+shellQuote(string(d.dir))+" creates it")
	}
	if err != nil {
		d.keySkip = "node.key cannot be inspected"
		return problem(c, statusFail, fmt.Sprintf("cannot inspect %s: %v", path, err), "")
	}
	// A key whose mode is too open is still read, as serve reads it (with a
	// warning): the chain and the port are checked with it, and the line says
	// what is wrong, the mode, not that the key cannot be read.
	mode := secretModeProblem(c, path, fi)
	key, err := datadir.LoadNodeKey(path, d.quiet())
	if err != nil {
		d.keySkip = "node.key failed its check"
		if mode != nil && mode.Status == statusFail {
			return *mode
		}
		d.keySkip = "node.key cannot be read"
		return problem(c, statusFail, err.Error(), "restore node.key from a backup; a new key cannot continue this node's chain")
	}
	d.key = key
	did := eventlog.DIDKey(key.Public().(ed25519.PublicKey))
	if mode != nil {
		mode.Detail += "; it is the Ed25519 key of " + did
		return *mode
	}
	c.Status, c.Detail = statusOK, "mode 0600, the Ed25519 key of "+did
	return c
}

// generatedToken is the form of the owner token serve creates: 32 random
// bytes in hex.
var generatedToken = regexp.MustCompile(`^[0-9a-f]{64}$`)

func (d *checker) checkControlToken() Check {
	c := Check{Name: "control_token"}
	if !d.dirExists {
		return skipped(c, "no data dir")
	}
	path := d.dir.TokenPath()
	fi, err := os.Stat(path)
	if m, ok := d.mirrorControlToken(c); ok {
		return m
	}
	if errors.Is(err, fs.ErrNotExist) {
		return problem(c, statusFail, path+" is missing",
			"civnode serve --data-dir "+shellQuote(string(d.dir))+" creates a new owner token at its next start")
	}
	if err != nil {
		return problem(c, statusFail, fmt.Sprintf("cannot inspect %s: %v", path, err), "")
	}
	mode := secretModeProblem(c, path, fi)
	if mode != nil && mode.Status == statusFail {
		return *mode
	}
	tok, err := datadir.LoadControlToken(path, d.quiet())
	if err != nil {
		return problem(c, statusFail, err.Error(),
			"remove "+shellQuote(path)+" and restart the node, which creates a new owner token (clients of the old one need the new one)")
	}
	if mode != nil {
		return *mode
	}
	if !generatedToken.MatchString(tok) {
		return problem(c, statusWarn, "mode 0600, but the token is not the 64 hex digits serve creates: a token made by hand is only as strong as its randomness",
			"remove "+shellQuote(path)+" and restart the node, which creates a new owner token")
	}
	c.Status, c.Detail = statusOK, "mode 0600, a 64-hex-digit owner token"
	return c
}

func (d *checker) checkRegistryCredential() Check {
	c := Check{Name: "registry_credential"}
	if !d.dirExists {
		return skipped(c, "no data dir")
	}
	path := d.dir.RegistryCredentialPath()
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		c.Status, c.Detail = statusOK, "none (optional): registry requests carry only the node's signature"
		if d.mirror {
			c.Detail = "none (a mirror uses no agent registry)"
		}
		return c
	}
	if err != nil {
		return problem(c, statusFail, fmt.Sprintf("cannot inspect %s: %v", path, err), "")
	}
	mode := secretModeProblem(c, path, fi)
	if mode != nil && mode.Status == statusFail {
		return *mode
	}
	b, err := datadir.ReadSecret(path, d.quiet())
	if err != nil {
		return problem(c, statusFail, fmt.Sprintf("read %s: %v", path, err), "")
	}
	cred := strings.TrimSpace(string(b))
	// The client refuses a credential that cannot travel in a header, and
	// so would serve; its message quotes nothing of the credential.
	if _, err := servicenet.New(servicenet.Config{BaseURL: d.registryURL, Credential: cred, Sign: func([]byte) []byte { return nil }}); err != nil {
		return problem(c, statusFail, fmt.Sprintf("%s: %v", path, err), "put the credential the registry gave you in "+shellQuote(path)+", on one line")
	}
	d.credential = cred
	if mode != nil {
		return *mode
	}
	if cred == "" {
		return problem(c, statusWarn, path+" is empty: registry requests carry only the node's signature",
			"put the credential the registry gave you in "+shellQuote(path)+", or remove the file")
	}
	c.Status, c.Detail = statusOK, "mode 0600, one credential line"
	return c
}

// checkWallets checks the payment accounts' keys: one ok line when all are
// sound, else a line per problem.
func (d *checker) checkWallets() []Check {
	c := Check{Name: "wallets"}
	if !d.dirExists {
		return []Check{skipped(c, "no data dir")}
	}
	path := d.dir.WalletsPath()
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		c.Status, c.Detail = statusOK, "none (civnode wallet create makes payment accounts)"
		return []Check{c}
	}
	if err != nil {
		return []Check{problem(c, statusFail, fmt.Sprintf("cannot inspect %s: %v", path, err), "")}
	}
	if !fi.IsDir() {
		return []Check{problem(c, statusFail, path+" is not a directory", "move it away; civnode wallet create makes the directory")}
	}
	var out []Check
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		out = append(out, problem(c, statusFail, fmt.Sprintf("%s has mode %04o: group or others may list or change the payment keys", path, perm),
			"chmod 700 "+shellQuote(path)))
	}
	ks := servicenet.NewKeystore(path)
	refs, err := ks.Refs()
	if err != nil {
		return append(out, problem(c, statusFail, err.Error(), ""))
	}
	for _, ref := range refs {
		kp := filepath.Join(path, ref+".key")
		kc := Check{Name: "wallets"}
		kfi, err := os.Stat(kp)
		if err != nil {
			out = append(out, problem(kc, statusFail, fmt.Sprintf("cannot inspect %s: %v", kp, err), ""))
			continue
		}
		mode := secretModeProblem(kc, kp, kfi)
		if mode != nil && mode.Status == statusFail {
			out = append(out, *mode)
			continue
		}
		// The keystore's own reading: what a payment would do. Its errors
		// name the file, never the key.
		if _, err := ks.Address(ref); err != nil {
			out = append(out, problem(kc, statusFail, err.Error(), "restore "+shellQuote(kp)+" from a backup"))
			continue
		}
		if mode != nil {
			out = append(out, *mode)
		}
	}
	if len(out) > 0 {
		return out
	}
	c.Status, c.Detail = statusOK, fmt.Sprintf("%s, each mode 0600", plural(len(refs), "payment account key"))
	if len(refs) > 0 {
		c.Detail += " (" + strings.Join(refs, ", ") + ")"
	}
	return []Check{c}
}

// secretModeProblem judges a secret file's type, owner and mode: group or
// others having any access, or another owner, is a failure (the secret may
// already be exposed); an owner-only mode other than the 0600 the node writes
// is a warning. It is nil for a regular 0600 file of the current user.
func secretModeProblem(c Check, path string, fi fs.FileInfo) *Check {
	if !fi.Mode().IsRegular() {
		p := problem(c, statusFail, path+" is not a regular file", "restore it from a backup")
		return &p
	}
	if p := ownerProblem(c, path, fi); p != nil {
		return p
	}
	perm := fi.Mode().Perm()
	var p Check
	switch {
	case perm&0o077 != 0:
		p = problem(c, statusFail, fmt.Sprintf("%s has mode %04o: %s", path, perm, looseAccess(perm)), "chmod 600 "+shellQuote(path))
	case perm != 0o600:
		p = problem(c, statusWarn, fmt.Sprintf("%s has mode %04o, not 0600", path, perm), "chmod 600 "+shellQuote(path))
	default:
		return nil
	}
	return &p
}

// looseAccess says what group or others may do with a secret of mode perm,
// which gives them some access.
func looseAccess(perm fs.FileMode) string {
	what := "accessible"
	switch r, w := perm&0o044 != 0, perm&0o022 != 0; {
	case r && w:
		what = "readable and writable"
	case r:
		what = "readable"
	case w:
		what = "writable"
	}
	return "it is " + what + " by group or others; a secret must be yours alone (mode 0600)"
}

// ownerProblem is a failure for a file the current user does not own: the
// node, run by this user, may not be able to use it, and its owner can
// change it.
func ownerProblem(c Check, path string, fi fs.FileInfo) *Check {
	uid, ok := fileOwner(fi)
	if !ok || uid == os.Getuid() {
		return nil
	}
	p := problem(c, statusFail, fmt.Sprintf("%s belongs to uid %d, and you are uid %d", path, uid, os.Getuid()),
		"run doctor, and the node, as the user that owns the data dir; or chown -R "+fmt.Sprint(os.Getuid())+" "+shellQuote(path))
	return &p
}

func problem(c Check, status, detail, fix string) Check {
	c.Status, c.Detail, c.Fix = status, detail, fix
	return c
}

func skipped(c Check, why string) Check {
	c.Status, c.Detail = statusSkip, "not checked: "+why
	return c
}

// Free space thresholds. Below diskFail the node is about to fail a write:
// a memtable flush alone writes up to 32 MiB, and a failed fsync puts the log
// in fail-stop. Below diskWarn there is time to act.
const (
	diskWarn = 1 << 30
	diskFail = 64 << 20
)

// checkDisk reports the free space of the file system that holds the data
// dir, or would hold it.
func (d *checker) checkDisk() Check {
	c := Check{Name: "disk"}
	path := string(d.dir)
	if !d.dirExists {
		path = filepath.Dir(path)
	}
	free, err := freeBytes(path)
	if err != nil {
		return problem(c, statusWarn, fmt.Sprintf("cannot read the free space of %s: %v", path, err), "")
	}
	detail := fmt.Sprintf("%s free on the file system of %s", formatBytes(free), path)
	switch {
	case free < diskFail:
		return problem(c, statusFail, detail+": the node's next writes may fail, and it then stops taking writes",
			"free space on that file system, or move the data dir to a larger one")
	case free < diskWarn:
		return problem(c, statusWarn, detail+": less than 1 GiB", "free space on that file system, or move the data dir to a larger one")
	}
	c.Status, c.Detail = statusOK, detail
	return c
}

// formatBytes prints n in binary units with one decimal.
func formatBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
