// Package logkey names the attribute keys of every log line the node writes:
// the constants of keys.go, one per key. A key written as a literal at a
// call site could drift ("err" here, "error" there) and break an operator's
// queries; the repository's TestLogKeysAreConstants refuses it.
//
// The error of a line is always Err with an error value, never a string.
package logkey
