package localnode

import "errors"

// ErrUnproven means the process at --addr did not prove that it holds the
// data dir's node key, so the CLI did not send it the owner token.
var ErrUnproven = errors.New("could not prove it holds node.key; the owner token was not sent")

// ErrPlainHTTP means serve was asked to serve plain HTTP on an address that
// is not loopback, without --allow-plain-http.
var ErrPlainHTTP = errors.New("plain HTTP on an address that is not loopback")

// ErrTLSFiles means --tls-cert and --tls-key were not given together, or
// do not hold a certificate and its own key.
var ErrTLSFiles = errors.New("TLS certificate and key")
