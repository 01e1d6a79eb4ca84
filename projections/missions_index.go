package projections

import "sort"

// missionIndex is a set of missions ordered by creation seq: the unit every
// mission query pages through. Adding the newest mission, by far the most common
// change, is an append; a mission that moves between state indexes is removed
// and inserted in O(indexChunk + log n). The missions live in chunks of at most
// 2×indexChunk so that no change copies more than one chunk, however many
// missions the index holds. The caller holds the model's lock.
type missionIndex struct {
	chunks [][]*mission // each non-empty and ordered; chunk i precedes chunk i+1
	n      int
}

const indexChunk = 256

func (x *missionIndex) len() int {
	if x == nil {
		return 0
	}
	return x.n
}

// chunkFor returns the index of the first chunk whose last mission has a seq ≥
// seq, or len(chunks) when there is none.
func (x *missionIndex) chunkFor(seq uint64) int {
	return sort.Search(len(x.chunks), func(i int) bool {
		c := x.chunks[i]
		return c[len(c)-1].seq >= seq
	})
}

// add inserts m; adding a mission already present changes nothing.
func (x *missionIndex) add(m *mission) {
	if k := len(x.chunks); k == 0 || x.chunks[k-1][len(x.chunks[k-1])-1].seq < m.seq {
		if k == 0 || len(x.chunks[k-1]) >= indexChunk {
			x.chunks = append(x.chunks, make([]*mission, 0, indexChunk))
			k++
		}
		x.chunks[k-1] = append(x.chunks[k-1], m)
		x.n++
		return
	}
	i := x.chunkFor(m.seq)
	c := x.chunks[i]
	j := sort.Search(len(c), func(j int) bool { return c[j].seq >= m.seq })
	if c[j] == m {
		return
	}
	c = append(c, nil)
	copy(c[j+1:], c[j:])
	c[j] = m
	x.n++
	if len(c) <= 2*indexChunk {
		x.chunks[i] = c
		return
	}
	// Split a full chunk in two, each with room to grow.
	head := append(make([]*mission, 0, 2*indexChunk), c[:indexChunk]...)
	tail := append(make([]*mission, 0, 2*indexChunk), c[indexChunk:]...)
	x.chunks = append(x.chunks, nil)
	copy(x.chunks[i+2:], x.chunks[i+1:])
	x.chunks[i], x.chunks[i+1] = head, tail
}

// remove deletes m; removing a mission that is absent changes nothing.
func (x *missionIndex) remove(m *mission) {
	i := x.chunkFor(m.seq)
	if i == len(x.chunks) {
		return
	}
	c := x.chunks[i]
	j := sort.Search(len(c), func(j int) bool { return c[j].seq >= m.seq })
	if j == len(c) || c[j] != m {
		return
	}
	copy(c[j:], c[j+1:])
	c[len(c)-1] = nil
	c = c[:len(c)-1]
	x.n--
	if len(c) > 0 {
		x.chunks[i] = c
		return
	}
	copy(x.chunks[i:], x.chunks[i+1:])
	x.chunks[len(x.chunks)-1] = nil
	x.chunks = x.chunks[:len(x.chunks)-1]
}

// each calls fn for every mission with a seq above after, oldest first, until fn
// returns false.
func (x *missionIndex) each(after uint64, fn func(*mission) bool) {
	if x == nil {
		return
	}
	i := sort.Search(len(x.chunks), func(i int) bool {
		c := x.chunks[i]
		return c[len(c)-1].seq > after
	})
	if i == len(x.chunks) {
		return
	}
	c := x.chunks[i]
	j := sort.Search(len(c), func(j int) bool { return c[j].seq > after })
	for ; i < len(x.chunks); i, j = i+1, 0 {
		for _, m := range x.chunks[i][j:] {
			if !fn(m) {
				return
			}
		}
	}
}

// newest returns the last n missions, oldest first.
func (x *missionIndex) newest(n int) []*mission {
	if x == nil || n <= 0 {
		return nil
	}
	out := make([]*mission, 0, min(n, x.n))
	for i := len(x.chunks) - 1; i >= 0 && len(out) < n; i-- {
		c := x.chunks[i]
		for j := len(c) - 1; j >= 0 && len(out) < n; j-- {
			out = append(out, c[j])
		}
	}
	for l, r := 0, len(out)-1; l < r; l, r = l+1, r-1 {
		out[l], out[r] = out[r], out[l]
	}
	return out
}

// indexOf returns the index of key in m, creating it.
func indexOf(m map[string]*missionIndex, key string) *missionIndex {
	x := m[key]
	if x == nil {
		x = &missionIndex{}
		m[key] = x
	}
	return x
}

// dropFrom removes ms from the index of key in m, and the index once it is empty.
func dropFrom(m map[string]*missionIndex, key string, ms *mission) {
	x := m[key]
	if x == nil {
		return
	}
	x.remove(ms)
	if x.n == 0 {
		delete(m, key)
	}
}
