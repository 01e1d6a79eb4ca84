// Package unixsock listens on and dials the node's private unix sockets in its
// data dir (control.sock, oracle.sock).
//
// A socket is private by where it lives and by its mode: [Listen] makes it
// 0600 inside the 0700 data dir, so only the user who runs the node connects,
// and that user could as well read the node's key. The caller of Listen holds
// the data dir's database lock, so a socket already at the path is a stale one
// left by a killed node, and is replaced; anything else at the path is not the
// node's to delete. Closing the listener removes the socket file.
//
// [Dial] reports a path with no socket as fs.ErrNotExist, so that a caller can
// tell "no node serves here" from "a node serves here and failed".
//
// It imports only the standard library, so any package of the module may use it.
package unixsock
