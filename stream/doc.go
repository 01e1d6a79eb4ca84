// Package stream will run the embedded NATS server, publish each committed event
// and serve the WebSocket /v1/stream (wire.md §3). It imports only eventlog; it
// arrives with the live-stream issue.
package stream
