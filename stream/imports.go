package stream

// Placeholders that keep the pinned modules in go.mod until the package uses
// them (issue 17); the stream helper replaces this file.
import (
	_ "github.com/coder/websocket"
	_ "github.com/nats-io/nats-server/v2/server"
	_ "github.com/nats-io/nats.go"
)
