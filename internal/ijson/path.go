package ijson

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// memberPath turns ptr, a JSON pointer into body, into a field as the API names
// one: the member names on the way, joined by dots, without array indexes
// (/payload/steps/0/x is payload.steps.x). A pointer token alone cannot say
// whether it is an index or a name ("0" may be either), so body is walked along
// it. Characters I-JSON forbids show as U+FFFD, so that the error body is I-JSON
// too.
func memberPath(body []byte, ptr jsontext.Pointer) string {
	d := jsontext.NewDecoder(bytes.NewBuffer(body),
		jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))
	var names []string
walk:
	for tok := range ptr.Tokens() {
		switch d.PeekKind() {
		case jsontext.KindBeginArray:
			n, err := strconv.Atoi(tok)
			if _, rerr := d.ReadToken(); err != nil || rerr != nil {
				break walk
			}
			for range n {
				if d.SkipValue() != nil {
					break walk
				}
			}
		case jsontext.KindBeginObject:
			names = append(names, tok)
			if _, err := d.ReadToken(); err != nil {
				break walk
			}
			for {
				if d.PeekKind() != jsontext.KindString {
					break walk // not found: the name is still the best guess
				}
				name, err := d.ReadToken()
				if err != nil {
					break walk
				}
				if name.String() == tok {
					break
				}
				if d.SkipValue() != nil {
					break walk
				}
			}
		default:
			break walk
		}
	}
	return strings.Map(func(r rune) rune {
		if isNoncharacter(r) {
			return utf8.RuneError
		}
		return r
	}, strings.ToValidUTF8(strings.Join(names, "."), string(utf8.RuneError)))
}
