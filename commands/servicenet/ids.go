package servicenet

import (
	"fmt"
)

// maxIDLen is the upper bound on an agent, task or receipt id (docs/servicenet.md).
const maxIDLen = 128

// InvalidIDError is an agent or task id outside the registry id alphabet. It is the
// caller's input error, found before the registry is called, so package
// commands can answer 400 invalid_field naming Field.
type InvalidIDError struct {
	Field string // "agent_id" or "task_id"
	ID    string
}

// Error leaves the id out: it came from a client and may be long or
// unprintable.
func (e *InvalidIDError) Error() string {
	return fmt.Sprintf("%s must be 1 to %d of A-Z a-z 0-9 . _ : - and not \".\" or \"..\"", e.Field, maxIDLen)
}

func (e *InvalidIDError) Unwrap() error { return ErrInvalidID }

// ValidID reports whether id is a registry id (docs/servicenet.md):
// [A-Za-z0-9._:-]{1,128}. "." and ".." are refused as well, because as a path
// segment they would climb out of /v1/agents/ even when escaped (PathEscape
// leaves dots alone).
func ValidID(id string) bool {
	if len(id) == 0 || len(id) > maxIDLen || id == "." || id == ".." {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.', c == '_', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

// checkID returns an *InvalidIDError naming field when id is not valid.
func checkID(field, id string) error {
	if !ValidID(id) {
		return &InvalidIDError{Field: field, ID: id}
	}
	return nil
}
