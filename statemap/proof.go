package statemap

// Proof is the proof of one key's entry, or of its absence, under a root:
// Siblings are the hashes beside the key's path from the root down to depth
// d = len(Siblings), root-side first. What sits at depth d is the key's own
// entry (membership), an empty subtree (absence), or one other entry
// (absence), named by KeyHash and ValueHash, which share the key's first d
// bits. The JSON field names are those of GET /v1/state/proof, so a Proof
// embedded in that answer's struct writes its part of it.
//
// A proof stops at the first depth where the key's subtree holds at most one
// entry; that is the only proof of a key that folds to the root (doc.go).
type Proof struct {
	Siblings  []Hash `json:"siblings"`
	KeyHash   *Hash  `json:"key_hash,omitempty"`
	ValueHash *Hash  `json:"value_hash,omitempty"`
}

// Prove returns the proof for key hash k in the map that r reads: of its
// entry if it has one, else of its absence. Siblings is never nil, so its
// JSON is an array even at depth 0. It reads the root record and one node
// record per branching node on k's path.
func Prove(r Reader, k Hash) (Proof, error) {
	p, _, _, err := ProveEntry(r, k)
	return p, err
}

// ProveEntry is Prove, and also returns k's entry when the map holds it:
// its value hash and locator.
func ProveEntry(r Reader, k Hash) (p Proof, e Entry, found bool, err error) {
	p = Proof{Siblings: []Hash{}}
	_, _, cur, err := readRoot(r)
	if err != nil {
		return Proof{}, Entry{}, false, err
	}
	for d := 0; ; {
		switch cur.kind {
		case kindEmpty:
			return p, Entry{}, false, nil
		case kindLeaf:
			if cur.key != k {
				other := cur
				p.KeyHash, p.ValueHash = &other.key, &other.hash
				return p, Entry{}, false, nil
			}
			return p, Entry{KeyHash: cur.key, ValueHash: cur.hash, Loc: cur.loc}, true, nil
		}
		// Between d and the branching depth b every sibling is empty; the
		// path either leaves the subtree on the way (j < b), where its own
		// side is empty, or reaches the branching node.
		b := cur.depth
		if j := commonPrefix(k, cur.key); j < b {
			for ; d < j; d++ {
				p.Siblings = append(p.Siblings, Hash{})
			}
			p.Siblings = append(p.Siblings, cur.hashAt(j+1))
			return p, Entry{}, false, nil
		}
		for ; d < b; d++ {
			p.Siblings = append(p.Siblings, Hash{})
		}
		kids, err := readNode(r, cur)
		if err != nil {
			return Proof{}, Entry{}, false, err
		}
		p.Siblings = append(p.Siblings, kids[1-k.Bit(b)].hashAt(b+1))
		cur, d = kids[k.Bit(b)], b+1
	}
}
