package statemap

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

// benchEntries is the size of the map the benchmarks measure.
const benchEntries = 1_000_000

// The map of benchEntries is built once and shared: building it takes
// seconds, and the benchmarks that change it keep its size.
var (
	benchOnce  sync.Once
	benchStore *MemStore
	benchKeys  []Hash
	benchBuild error
)

func benchValue(i, round int) Hash {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:], uint64(i))
	binary.BigEndian.PutUint64(b[8:], uint64(round))
	return HashValue(b[:])
}

func benchMap(b *testing.B) (*MemStore, []Hash) {
	b.Helper()
	benchOnce.Do(func() {
		benchStore = new(MemStore)
		benchKeys = make([]Hash, benchEntries)
		cs := make([]Change, benchEntries)
		for i := range cs {
			benchKeys[i] = HashKey(fmt.Sprintf("mission/%d", i))
			cs[i] = Change{KeyHash: benchKeys[i], ValueHash: benchValue(i, 0)}
		}
		_, _, benchBuild = Update(benchStore, benchStore, cs)
	})
	if benchBuild != nil {
		b.Fatal(benchBuild)
	}
	return benchStore, benchKeys
}

// countingStore counts a MemStore's reads and writes, which are what an
// update costs in a real store.
type countingStore struct {
	*MemStore
	reads, writes int
}

func (c *countingStore) Get(key []byte) ([]byte, bool, error) {
	c.reads++
	return c.MemStore.Get(key)
}

func (c *countingStore) Set(key, value []byte) error {
	c.writes++
	return c.MemStore.Set(key, value)
}

func (c *countingStore) Delete(key []byte) error {
	c.writes++
	return c.MemStore.Delete(key)
}

// BenchmarkBuild builds a map of a million entries in one batch, as a
// mirror or a node's first commitment does, and reports the cost per entry.
func BenchmarkBuild(b *testing.B) {
	cs := make([]Change, benchEntries)
	for i := range cs {
		cs[i] = Change{KeyHash: HashKey(fmt.Sprintf("mission/%d", i)), ValueHash: benchValue(i, 0)}
	}
	for b.Loop() {
		s := new(MemStore)
		if _, _, err := Update(s, s, cs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchEntries), "ns/entry")
}

// BenchmarkUpdate changes the values of random keys of a map of a million
// entries, in batches of several sizes, and reports the cost per changed
// key: time, and the store's reads and writes; with cache=32MiB, through a
// Cache of that bound kept across the batches, whose hits the store does
// not see.
func BenchmarkUpdate(b *testing.B) {
	s, keys := benchMap(b)
	for _, size := range []int{1, 100, 10_000} {
		for _, bound := range []int{0, 32 << 20} {
			name := fmt.Sprintf("batch=%d", size)
			if bound > 0 {
				name += fmt.Sprintf("/cache=%dMiB", bound>>20)
			}
			b.Run(name, func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, uint64(size)))
				c := &countingStore{MemStore: s}
				cache := NewCache(bound)
				cs := make([]Change, size)
				// Each run's values are new, so that no change is one
				// an earlier run already made.
				round := bound
				for b.Loop() {
					b.StopTimer()
					round++
					seen := make(map[int]bool, size)
					for j := range cs {
						i := rng.IntN(len(keys))
						for seen[i] {
							i = rng.IntN(len(keys))
						}
						seen[i] = true
						cs[j] = Change{KeyHash: keys[i], ValueHash: benchValue(i, round)}
					}
					b.StartTimer()
					if bound == 0 {
						if _, _, err := Update(c, c, cs); err != nil {
							b.Fatal(err)
						}
						continue
					}
					from, _, err := Root(s)
					if err != nil {
						b.Fatal(err)
					}
					cw := cache.Writer(c)
					to, _, err := Update(cache.Reader(c, from), cw, cs)
					if err != nil {
						b.Fatal(err)
					}
					cw.Committed(from, to)
				}
				changes := float64(b.N * size)
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/changes, "ns/change")
				b.ReportMetric(float64(c.reads)/changes, "reads/change")
				b.ReportMetric(float64(c.writes)/changes, "writes/change")
			})
		}
	}
}

// BenchmarkChurn inserts new keys and removes as many in each batch, so the
// map keeps its million entries while its shape changes.
func BenchmarkChurn(b *testing.B) {
	s, _ := benchMap(b)
	const size = 100
	c := &countingStore{MemStore: s}
	next := 0
	var live []Hash
	for b.Loop() {
		b.StopTimer()
		cs := make([]Change, 0, size)
		for len(cs) < size/2 && len(live) > 0 {
			cs = append(cs, Change{KeyHash: live[0], Delete: true})
			live = live[1:]
		}
		for len(cs) < size {
			k := HashKey(fmt.Sprintf("identity/churn-%d", next))
			cs = append(cs, Change{KeyHash: k, ValueHash: benchValue(next, 0)})
			live = append(live, k)
			next++
		}
		b.StartTimer()
		if _, _, err := Update(c, c, cs); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	// Leave the shared map as it was built.
	cs := make([]Change, len(live))
	for i, k := range live {
		cs[i] = Change{KeyHash: k, Delete: true}
	}
	if _, _, err := Update(s, s, cs); err != nil {
		b.Fatal(err)
	}
	changes := float64(b.N * size)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/changes, "ns/change")
	b.ReportMetric(float64(c.reads)/changes, "reads/change")
	b.ReportMetric(float64(c.writes)/changes, "writes/change")
}

// BenchmarkProve proves random keys, present and absent, in a map of a
// million entries.
func BenchmarkProve(b *testing.B) {
	s, keys := benchMap(b)
	for _, present := range []bool{true, false} {
		b.Run(fmt.Sprintf("present=%v", present), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(2, 0))
			c := &countingStore{MemStore: s}
			siblings := 0
			for b.Loop() {
				k := keys[rng.IntN(len(keys))]
				if !present {
					k = HashKey(fmt.Sprintf("mission/absent-%d", rng.Uint64()))
				}
				p, err := Prove(c, k)
				if err != nil {
					b.Fatal(err)
				}
				siblings += len(p.Siblings)
			}
			b.ReportMetric(float64(siblings)/float64(b.N), "siblings/proof")
			b.ReportMetric(float64(c.reads)/float64(b.N), "reads/proof")
		})
	}
}

// BenchmarkVerify verifies a membership proof from a map of a million
// entries.
func BenchmarkVerify(b *testing.B) {
	s, keys := benchMap(b)
	root, _, err := Root(s)
	if err != nil {
		b.Fatal(err)
	}
	v, _, _, err := Lookup(s, keys[7])
	if err != nil {
		b.Fatal(err)
	}
	p, err := Prove(s, keys[7])
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := VerifyHash(root, keys[7], &v, p); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(p.Siblings)), "siblings")
}

// BenchmarkStorage reports what a map of a million entries stores: bytes of
// keys and values per entry in the layout of doc.go, and records per entry.
// Its time is only that of reading the counts.
func BenchmarkStorage(b *testing.B) {
	s, _ := benchMap(b)
	_, n, err := Root(s)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		_ = s.Bytes()
	}
	b.ReportMetric(float64(s.Bytes())/float64(n), "bytes/entry")
	b.ReportMetric(float64(s.Len())/float64(n), "records/entry")
}
