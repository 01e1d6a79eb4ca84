// Package events holds the types and payloads of civnode's domain events: the
// persisted schema that commands write and projections read. It imports only the
// standard library and its parent eventlog, which both sides import already, so
// both can share it without importing each other (docs/architecture.md). It
// needs eventlog for one thing: a payload written on every request
// (mission.created, [MissionCreated]) writes its own RFC 8785 form with the
// log's string encoder (eventlog.CanonicalAppender).
//
// [Types] lists every event type a node writes, with what it records: the one
// list the briefings count from, held by tests to the Type* constants and to
// docs/events.md, which documents each type's payload.
//
// Payload structs are a persisted schema: every field has an explicit json tag, a
// field is never renamed or retyped, and a new meaning is a new event type
// (docs/events.md). An optional string is a *string and is JSON null when unset; a
// list is never null but [] when empty.
package events
