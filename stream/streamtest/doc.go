// Package streamtest runs a real, separate nats-server process, built from the
// module's pinned nats-server ([BuildServer]), for tests of the node's
// leaf-node link: [StartHub] starts a [Hub] that tests stop and restart. Like
// net/http/httptest it is imported by tests only.
package streamtest
