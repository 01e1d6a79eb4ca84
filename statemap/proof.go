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
// JSON is an array even at depth 0.
func Prove(r Reader, k Hash) (Proof, error) {
	p := Proof{Siblings: []Hash{}}
	s, err := readSpan(r, k, 0)
	if err != nil {
		return Proof{}, err
	}
	for d := 0; ; {
		switch s.n {
		case 0:
			return p, nil
		case 1:
			if s.first.key != k {
				other := s.first
				p.KeyHash, p.ValueHash = &other.key, &other.value
			}
			return p, nil
		}
		// Between d and the branching depth b every sibling is empty; the
		// path either leaves the entries on the way (j < b), where its
		// subtree is empty, or reaches the branching node.
		b := commonPrefix(s.first.key, s.last.key)
		j := commonPrefix(k, s.first.key)
		if j < b {
			for ; d < j; d++ {
				p.Siblings = append(p.Siblings, Hash{})
			}
			h, err := s.hash(r, j+1)
			if err != nil {
				return Proof{}, err
			}
			p.Siblings = append(p.Siblings, h)
			return p, nil
		}
		for ; d < b; d++ {
			p.Siblings = append(p.Siblings, Hash{})
		}
		sides, err := s.split(r, b)
		if err != nil {
			return Proof{}, err
		}
		h, err := sides[1-k.Bit(b)].hash(r, b+1)
		if err != nil {
			return Proof{}, err
		}
		p.Siblings = append(p.Siblings, h)
		s, d = sides[k.Bit(b)], b+1
	}
}
