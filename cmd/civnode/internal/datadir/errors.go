package datadir

import "errors"

// ErrInUse means another process, normally a running node, holds the
// database's lock.
var ErrInUse = errors.New("data dir in use by a running node")

// ErrNodeKeyLost means node.key is missing beside a chain that another key,
// the lost one, signed.
var ErrNodeKeyLost = errors.New("node.key is missing")

// ErrNotAMirror is a mirror command on a node's own data dir.
var ErrNotAMirror = errors.New("the data dir is a node's (it has node.key), not a mirror's")
