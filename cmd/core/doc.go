// Package core wires a node's centre: the event log opened with the read models
// folded into it (projections.Folder), the queries over those models, and the
// commands that decide against them. `civnode serve`, `replay`, the offline
// token commands and every test that needs a whole node open it through Open,
// so a test exercises the same wiring as the binary.
//
// It lives under cmd because wiring is the one place allowed to know every
// package (docs/architecture.md, deps_test.go). It must never import http: the http package's own
// tests open their nodes through it, so the import would be a cycle. The
// mapping of a Core onto http.Options therefore lives with its users: serve's
// localnode.ServerOptions (cmd/civnode/internal/localnode), and a helper of http's tests.
package core
