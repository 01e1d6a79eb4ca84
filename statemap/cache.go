package statemap

import "sync"

// Cache keeps a tree's root and node records in memory, within a bound of
// bytes, so that the levels every update and proof walk through are read
// from memory rather than from the store. Its readers name the tree they
// read by a version, a hash that names one tree and so its records: its
// root where the same entries always have the same locators, else one of
// the caller's. The cache holds records of one version, and a reader of
// any other goes to its store. A committed Update moves it to the next
// version by its writes (CacheWriter.Committed). It is safe for concurrent
// use.
type Cache struct {
	mu    sync.Mutex
	max   int
	size  int
	root  Hash
	valid bool
	m     map[string][]byte
	// levels holds the keys of m by level (cacheLevel), so that a full
	// cache drops the deepest records first: every walk reads the upper
	// levels, and a record near the leaves is read by few.
	levels [cacheLevels]map[string]struct{}
}

// cacheLevels is one level for the root record and one for each depth a
// node can stand at.
const cacheLevels = 1 + 8*len(Hash{})

// cacheLevel is the level a cached record is kept at: 0 for the root, 1+d
// for a node at depth d (its key's second byte, nodeKey's layout).
func cacheLevel(key string) int {
	if key[0] == rootTag || len(key) < 2 {
		return 0
	}
	return 1 + int(key[1])
}

// cacheOverhead is about what a record costs in memory beyond its key and
// value: the map's slot and the two slices' headers.
const cacheOverhead = 64

// NewCache returns an empty cache that holds at most maxBytes of records,
// counting each record's key, value and overhead.
func NewCache(maxBytes int) *Cache {
	c := &Cache{max: maxBytes, m: map[string][]byte{}}
	for i := range c.levels {
		c.levels[i] = map[string]struct{}{}
	}
	return c
}

// cached says whether a record's key is one the cache keeps: the root and
// the nodes, which the walks read, and not the entries, which only Lookup
// does.
func cached(key []byte) bool {
	return len(key) > 0 && (key[0] == nodeTag || key[0] == rootTag)
}

// Reader returns a Reader over r, whose tree is of version version: it
// serves the records it keeps from memory while the cache holds that
// version, and keeps those it reads from r.
func (c *Cache) Reader(r Reader, version Hash) Reader { return cacheReader{c, r, version} }

type cacheReader struct {
	c    *Cache
	r    Reader
	root Hash
}

func (cr cacheReader) Get(key []byte) ([]byte, bool, error) {
	if !cached(key) {
		return cr.r.Get(key)
	}
	c := cr.c
	c.mu.Lock()
	v, ok := c.m[string(key)]
	hit := ok && c.valid && c.root == cr.root
	c.mu.Unlock()
	if hit {
		return v, true, nil
	}
	v, ok, err := cr.r.Get(key)
	if err != nil || !ok {
		return v, ok, err
	}
	c.mu.Lock()
	if c.valid && c.root == cr.root {
		c.put(string(key), v)
	} else if !c.valid || len(c.m) == 0 {
		// An empty cache takes the root of its first reader.
		c.root, c.valid = cr.root, true
		c.put(string(key), v)
	}
	c.mu.Unlock()
	return v, true, nil
}

// put keeps a copy of value under key, making room first by dropping
// records of key's level or deeper, deepest first; a record that would
// displace shallower ones is not kept. c.mu is held.
func (c *Cache) put(key string, value []byte) {
	c.remove(key)
	n := len(key) + len(value) + cacheOverhead
	if n > c.max {
		return
	}
	level := cacheLevel(key)
	for d := len(c.levels) - 1; c.size+n > c.max; {
		for d >= level && len(c.levels[d]) == 0 {
			d--
		}
		if d < level {
			return
		}
		for k := range c.levels[d] {
			c.remove(k)
			break
		}
	}
	c.m[key] = append([]byte(nil), value...)
	c.levels[level][key] = struct{}{}
	c.size += n
}

// remove drops key's record; c.mu is held.
func (c *Cache) remove(key string) {
	if v, ok := c.m[key]; ok {
		c.size -= len(key) + len(v) + cacheOverhead
		delete(c.m, key)
		delete(c.levels[cacheLevel(key)], key)
	}
}

// Bytes is what the records held count against the bound.
func (c *Cache) Bytes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}

// Writer returns a Writer over w that notes the writes of one Update, so
// that once the caller has committed them to its store, Committed moves the
// cache along.
func (c *Cache) Writer(w Writer) *CacheWriter { return &CacheWriter{c: c, w: w} }

// CacheWriter passes an Update's writes to its store and notes those of
// the records the cache keeps.
type CacheWriter struct {
	c      *Cache
	w      Writer
	writes []cacheWrite
}

type cacheWrite struct {
	key   string
	value []byte // nil: deleted
}

func (cw *CacheWriter) Set(key, value []byte) error {
	if cached(key) {
		cw.writes = append(cw.writes, cacheWrite{string(key), append([]byte{}, value...)})
	}
	return cw.w.Set(key, value)
}

func (cw *CacheWriter) Delete(key []byte) error {
	if cached(key) {
		cw.writes = append(cw.writes, cacheWrite{key: string(key)})
	}
	return cw.w.Delete(key)
}

// Committed tells the cache that the writes went to the store, taking its
// tree from version from to version to. The records an Update writes are
// all that differ between the two, so a cache of some of from's records,
// with the writes, holds some of to's; a cache of another version drops
// what it held first.
func (cw *CacheWriter) Committed(from, to Hash) {
	c := cw.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.valid || c.root != from {
		clear(c.m)
		for _, l := range c.levels {
			clear(l)
		}
		c.size = 0
	}
	for _, wr := range cw.writes {
		if wr.value == nil {
			c.remove(wr.key)
		} else {
			c.put(wr.key, wr.value)
		}
	}
	c.root, c.valid = to, true
}
