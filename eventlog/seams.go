package eventlog

import "github.com/cockroachdb/pebble/v2"

// seams are what the package's own benchmarks and tests change in Open to
// price one part of the store alone. No caller of the package can set them,
// so a production log always has its tree and its own Pebble options. The
// package's tests run one at a time, which is what lets a test set them and
// put them back without a lock.
var seams struct {
	// withoutTree keeps no Merkle tree, for the benchmark that prices it
	// (BenchmarkAppendTree). A log opened so must not be opened again with
	// the tree: its stored hashes would be missing.
	withoutTree bool
	// tune, if set, changes Pebble's options before the store is opened,
	// for the benchmark that compares them (BenchmarkPebbleOptions) and a
	// test that holds compactions off.
	tune func(*pebble.Options)
}
