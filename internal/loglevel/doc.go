// Package loglevel gives an slog handler a floor ([Floor]): records below it are
// dropped before they are formatted. It quiets a component that logs its
// routine at Info (Pebble in bench's scratch logs, the MCP SDK's per-request
// sessions) without lowering the level of the logger it shares.
//
// It imports only the standard library, so any package of the module may use
// it.
package loglevel
