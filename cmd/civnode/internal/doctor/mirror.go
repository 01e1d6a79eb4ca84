package doctor

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/eventlog"
)

// A mirror's data dir (civnode mirror, serve --mirror-of) has no node.key: a
// mirror never signs. It has origin.vkey instead, the origin's note verifier
// key pinned on its first run, and its chain is the origin's, checked with
// that key. Its report has an origin_key line where a node's has node_key;
// the other checks judge it as what it is: the chain is the origin's, a
// control.token appears only once serve --mirror-of has run, the port
// cannot be proved to be the mirror's (it holds no key to prove it with),
// and a mirror uses no agent registry.

// checkOriginKey judges a mirror's origin.vkey: a regular file of the
// current user that only the owner may write (whoever can replace it can
// point the mirror at another origin's chain), holding a node's verifier key.
func (d *checker) checkOriginKey() Check {
	c := Check{Name: "origin_key"}
	path := d.dir.OriginKeyPath()
	fi, err := os.Stat(path)
	if err != nil {
		d.keySkip = "origin.vkey cannot be inspected"
		return problem(c, statusFail, fmt.Sprintf("cannot inspect %s: %v", path, err), "")
	}
	if !fi.Mode().IsRegular() {
		d.keySkip = "origin.vkey is not a regular file"
		return problem(c, statusFail, path+" is not a regular file", d.originFix())
	}
	if p := ownerProblem(c, path, fi); p != nil {
		d.keySkip = "origin.vkey failed its check"
		return *p
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		d.keySkip = "origin.vkey failed its check"
		return problem(c, statusFail, fmt.Sprintf("%s has mode %04o: group or others may replace the origin's key the mirror checks its chain with", path, perm),
			"chmod 644 "+shellQuote(path))
	}
	k, err := d.dir.PinnedOrigin()
	if err != nil {
		d.keySkip = "origin.vkey cannot be read"
		return problem(c, statusFail, err.Error(), d.originFix())
	}
	d.origin = &k
	c.Status, c.Detail = statusOK, fmt.Sprintf("a mirror's data dir: no node.key (a mirror never signs); origin.vkey pins the origin %s, the Ed25519 key of %s", k.Origin, k.DID)
	return c
}

// originFix is what to do about an origin.vkey that cannot be used.
func (d *checker) originFix() string {
	return "restore origin.vkey from a backup of the mirror to " + shellQuote(d.dir.OriginKeyPath()) +
		", or put the origin's verifier key there, one line (the verifier-key file of its published directory)"
}

// chainKey is what the chain of a stopped node or mirror is checked with;
// ok is false when neither node.key nor origin.vkey could be read.
func (d *checker) chainKey() (k datadir.ChainKey, ok bool) {
	switch {
	case d.key != nil:
		return datadir.ChainKey{Node: d.key}, true
	case d.origin != nil:
		return datadir.ChainKey{Origin: d.origin.PublicKey()}, true
	}
	return datadir.ChainKey{}, false
}

// chainDID is the DID whose chain the data dir must hold: the node's, or a
// mirror's origin's; "" when neither key could be read.
func (d *checker) chainDID() string {
	switch {
	case d.key != nil:
		return eventlog.DIDKey(d.key.Public().(ed25519.PublicKey))
	case d.origin != nil:
		return d.origin.DID
	}
	return ""
}

// mirrorControlToken is the control_token line of a mirror without one:
// civnode mirror needs none, and serve --mirror-of creates it.
func (d *checker) mirrorControlToken(c Check) (Check, bool) {
	if !d.mirror {
		return c, false
	}
	if _, err := os.Stat(d.dir.TokenPath()); !errors.Is(err, fs.ErrNotExist) {
		return c, false
	}
	c.Status, c.Detail = statusOK, "none: civnode mirror needs no owner token; serve --mirror-of creates one when it first serves this mirror"
	return c, true
}
