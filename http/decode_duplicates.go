package http

import (
	"encoding/json"
	"strings"
)

// duplicateKey reports the dotted path of the first object key that appears twice
// in the same object of body. It is a plain byte scan, not a JSON parser: it runs on
// every request body before the decoder, which reports malformed JSON itself, so on
// malformed input it may report nothing.
func duplicateKey(body []byte) (string, bool) {
	var stack []*jsonFrame
	expectKey := false
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '"':
			end, escaped := i+1, false
			for end < len(body) && body[end] != '"' {
				if body[end] == '\\' {
					escaped = true
					end++
				}
				end++
			}
			if end >= len(body) {
				return "", false
			}
			if expectKey && len(stack) > 0 {
				top := stack[len(stack)-1]
				key := string(body[i+1 : end])
				if escaped && json.Unmarshal(body[i:end+1], &key) != nil {
					return "", false
				}
				if top.seen(key) {
					return path(stack, key), true
				}
				top.key, expectKey = key, false
			}
			i = end
		case '{':
			stack = append(stack, &jsonFrame{object: true})
			expectKey = true
		case '[':
			stack = append(stack, &jsonFrame{})
			expectKey = false
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			expectKey = false
		case ',':
			expectKey = len(stack) > 0 && stack[len(stack)-1].object
		}
	}
	return "", false
}

// jsonFrame is an object or array that duplicateKey is inside.
type jsonFrame struct {
	object bool
	key    string   // the key whose value is being read
	keys   []string // keys seen so far, while few
	set    map[string]struct{}
}

// seen records key in the frame and reports whether it was there already. A
// small object keeps a slice; a large one switches to a map, so a body with
// many keys costs linear, not quadratic, time.
func (f *jsonFrame) seen(key string) bool {
	if f.set != nil {
		if _, ok := f.set[key]; ok {
			return true
		}
		f.set[key] = struct{}{}
		return false
	}
	for _, k := range f.keys {
		if k == key {
			return true
		}
	}
	f.keys = append(f.keys, key)
	if len(f.keys) > 16 {
		f.set = make(map[string]struct{}, 2*len(f.keys))
		for _, k := range f.keys {
			f.set[k] = struct{}{}
		}
		f.keys = nil
	}
	return false
}

func path(stack []*jsonFrame, last string) string {
	var b strings.Builder
	for _, f := range stack[:len(stack)-1] {
		if f.object {
			b.WriteString(f.key)
			b.WriteByte('.')
		}
	}
	return b.String() + last
}
