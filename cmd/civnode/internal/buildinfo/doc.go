// Package buildinfo says which build of civnode is running: the version,
// the commit it was built from, whether the work tree was modified, the Go
// version and the platform (civnode version, civnode --version, the
// civnode_build_info metric, node.started).
//
// A release build sets the version, commit and build time at link time, on
// package main's variables (-ldflags "-X main.version=…"), and passes them
// to Read; left empty, they come from what the Go toolchain recorded
// (runtime/debug.ReadBuildInfo: the module version and the vcs.* settings).
package buildinfo
