package statemap

import (
	"bytes"
	"crypto/sha256"
	"slices"
)

// The reference hashes a map by the definition alone, from scratch, with its
// own byte concatenation: what Update and Prove are held to.

func refLeaf(k, v Hash) Hash {
	return sha256.Sum256(slices.Concat([]byte{0}, k[:], v[:]))
}

func refNode(l, r Hash) Hash {
	return sha256.Sum256(slices.Concat([]byte{1}, l[:], r[:]))
}

func refBit(h Hash, i int) int {
	return int(h[i/8]>>(7-i%8)) & 1
}

// refCommon is how many leading bits a and b agree on.
func refCommon(a, b Hash) int {
	i := 0
	for i < 256 && refBit(a, i) == refBit(b, i) {
		i++
	}
	return i
}

// refSubtree is the hash of the subtree at depth d that holds keys (of m).
func refSubtree(m map[Hash]Hash, keys []Hash, d int) Hash {
	switch len(keys) {
	case 0:
		return Hash{}
	case 1:
		return refLeaf(keys[0], m[keys[0]])
	}
	var sides [2][]Hash
	for _, k := range keys {
		sides[refBit(k, d)] = append(sides[refBit(k, d)], k)
	}
	return refNode(refSubtree(m, sides[0], d+1), refSubtree(m, sides[1], d+1))
}

func refKeys(m map[Hash]Hash) []Hash {
	keys := make([]Hash, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b Hash) int { return bytes.Compare(a[:], b[:]) })
	return keys
}

func refRoot(m map[Hash]Hash) Hash {
	return refSubtree(m, refKeys(m), 0)
}

// refProve walks k's path from the root until its subtree holds at most one
// entry, collecting the hash of the subtree beside it at each depth.
func refProve(m map[Hash]Hash, k Hash) Proof {
	p := Proof{Siblings: []Hash{}}
	keys := refKeys(m)
	common := make(map[Hash]int, len(keys))
	for _, x := range keys {
		common[x] = refCommon(x, k)
	}
	for d := 0; ; d++ {
		var all []Hash
		for _, x := range keys {
			if common[x] >= d {
				all = append(all, x)
			}
		}
		if len(all) <= 1 {
			if len(all) == 1 && all[0] != k {
				other, v := all[0], m[all[0]]
				p.KeyHash, p.ValueHash = &other, &v
			}
			return p
		}
		var beside []Hash
		for _, x := range all {
			if refBit(x, d) != refBit(k, d) {
				beside = append(beside, x)
			}
		}
		p.Siblings = append(p.Siblings, refSubtree(m, beside, d+1))
	}
}

// refBranches is the hash of every subtree of m that has entries on both
// sides, by its node key: the node records a store must hold, no more.
// It hashes the tree once, bottom up.
func refBranches(m map[Hash]Hash) map[string]Hash {
	out := make(map[string]Hash)
	var walk func(keys []Hash, d int) Hash
	walk = func(keys []Hash, d int) Hash {
		if len(keys) < 2 {
			return refSubtree(m, keys, d)
		}
		var sides [2][]Hash
		for _, k := range keys {
			sides[refBit(k, d)] = append(sides[refBit(k, d)], k)
		}
		h := refNode(walk(sides[0], d+1), walk(sides[1], d+1))
		if len(sides[0]) > 0 && len(sides[1]) > 0 {
			out[string(nodeKey(keys[0], d))] = h
		}
		return h
	}
	walk(refKeys(m), 0)
	return out
}
