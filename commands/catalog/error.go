package catalog

// Error is why a catalog was refused. Path is the JSON path of the field at
// fault, such as mission_templates[3].required_role; it is empty when the file
// is not JSON at all, and then Message names the line and column.
type Error struct {
	Path    string
	Message string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return e.Message
	}
	return e.Path + ": " + e.Message
}
