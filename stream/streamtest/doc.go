// Package streamtest runs a real, separate nats-server process, built from the
// module's pinned nats-server, for tests of the node's leaf-node link. Like
// net/http/httptest it is imported by tests only.
package streamtest
