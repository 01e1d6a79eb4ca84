// Package ijson decodes JSON that a client sends the node, request bodies of
// the HTTP API and lines of the oracle socket, by one rule: the bytes must be
// exactly one I-JSON value (RFC 7493), and a decode matches member names
// exactly and refuses unknown members.
//
// I-JSON, because what the node signs must be what the client sent.
// encoding/json turns invalid UTF-8 and lone surrogate escapes into U+FFFD, so
// a body with "\ud800" would be stored and signed as "\ufffd"; a noncharacter
// is not interchangeable text; and of a name given twice, which value counts
// is up to the parser. So [Check] refuses invalid UTF-8, a surrogate that is
// not half of a pair (raw or escaped), a noncharacter (raw or escaped), a name
// twice in one object, and anything after the value, in every string at any
// depth, names included.
//
// [Decode] checks the bytes as Check does, apart from the destination (a
// fault anywhere, inside a free-form payload too, is invalid_json before any
// question of what the fields mean), then decodes them into a struct,
// matching member names exactly (encoding/json also took "Role" for "role",
// which hid a misspelt name) and refusing members the struct does not declare.
//
// A refusal is an [*Error] with the code the API sends ([CodeInvalidJSON],
// [CodeUnknownField], [CodeInvalidField]), the member at fault named as the
// API names one (names joined by dots, array indexes left out:
// payload.steps.x), and a message for humans, itself I-JSON text. Any other
// error is the caller's fault (a destination that is not a non-nil pointer).
//
// It imports nothing of ours, so the HTTP adapter and the oracle socket share
// it without one depending on the other.
package ijson
