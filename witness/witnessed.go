package witness

import (
	"encoding/binary"
	"strings"
)

// Witnessed is the newest checkpoint with a quorum of cosignatures: the log's
// note with the cosignature lines appended, every valid one gathered for that
// checkpoint, not only the first quorum.
type Witnessed struct {
	TreeSize   int64    `json:"tree_size"`
	Checkpoint string   `json:"checkpoint"`
	Cosigners  []string `json:"cosigners"`
}

// sameTree reports whether signed, a note of the log, has the body (origin,
// size, root) of w's checkpoint.
func (w *Witnessed) sameTree(signed []byte) bool {
	body, _, ok := strings.Cut(w.Checkpoint, "\n\n")
	other, _, ok2 := strings.Cut(string(signed), "\n\n")
	return ok && ok2 && body == other
}

// with is w carrying line, r's verified cosignature of w's checkpoint: in
// place of an older line by r's key (a newer time serves observers that
// check a cosignature's age), or appended. w itself is not changed, since
// callers of Submitter.Witnessed share its slices; changed is false when line
// is there already.
func (w *Witnessed) with(r Remote, line string) (out *Witnessed, changed bool) {
	body, sigs, ok := strings.Cut(w.Checkpoint, "\n\n")
	if !ok {
		return w, false
	}
	var b strings.Builder
	b.WriteString(body + "\n\n")
	replaced := false
	for _, l := range strings.SplitAfter(sigs, "\n") {
		if l == "" {
			continue
		}
		if name, sig, ok := parseSignatureLine(l); ok && name == r.Name() && len(sig) >= 4 && binary.BigEndian.Uint32(sig) == r.verifier.KeyHash() {
			if replaced {
				continue // a second line by one key serves no observer
			}
			l, replaced = line, true
		}
		b.WriteString(l)
	}
	cosigners := append([]string{}, w.Cosigners...)
	if !replaced {
		b.WriteString(line)
		cosigners = append(cosigners, r.Name())
	}
	if b.String() == w.Checkpoint {
		return w, false
	}
	return &Witnessed{TreeSize: w.TreeSize, Checkpoint: b.String(), Cosigners: cosigners}, true
}
