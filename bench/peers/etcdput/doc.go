// Command etcdput measures etcd's Put over gRPC on this machine, so that
// civnode's signed creates can be read beside a durable key-value write of a
// well-known system, measured the same way.
//
// It starts one embedded etcd member (etcd v3.7.3, embed.StartEtcd) in a
// temporary dir with etcd's default durability: fsync is on (the raft WAL is
// synced before a Put is acknowledged; concurrent Puts share a sync, as raft
// batches them), the backend commits every 100 ms or 10,000 writes, and a
// snapshot is taken every 10,000 entries. Client and peer listen on
// 127.0.0.1. It puts a warm-up batch, then -n Puts of distinct keys with
// values of -value-size bytes from -c goroutines over -conns gRPC client
// connections (goroutine i uses connection i mod conns), times each Put, checks
// that etcd holds every key, and prints one JSON line:
//
//	{"puts_per_s":…,"p50_ms":…,"p99_ms":…,"clients":64,"conns":8,"n":20000,"value_bytes":461}
//
// Progress and errors go to stderr; the exit status is not 0 on any error.
//
// This is its own module, outside civnode's, so that etcd never becomes a
// dependency of the node: civnode bench --peer etcd builds it with go build.
package main
