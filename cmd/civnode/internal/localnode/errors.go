package localnode

import "errors"

// ErrUnproven means the process at --addr did not prove that it holds the
// data dir's node key, so the CLI did not send it the owner token.
var ErrUnproven = errors.New("could not prove it holds node.key; the owner token was not sent")
