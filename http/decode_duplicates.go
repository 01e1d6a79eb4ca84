package http

import (
	"bytes"
	"encoding/json"
)

// duplicateKey reports the dotted path of the first object key that appears twice
// in the same object of body. Malformed JSON reports nothing here; the decoder
// rejects it with a better message.
func duplicateKey(body []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	type frame struct {
		object bool
		keys   map[string]bool
		key    string // the key whose value is being read, in an object
		expect bool   // in an object: the next token is a key
	}
	var stack []*frame
	path := func(last string) string {
		p := ""
		for _, f := range stack {
			if f.object && f.key != "" && f != stack[len(stack)-1] {
				p += f.key + "."
			}
		}
		return p + last
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.expect && tok != json.Delim('}') {
			k, _ := tok.(string)
			if top.keys[k] {
				return path(k), true
			}
			top.keys[k] = true
			top.key, top.expect = k, false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, keys: map[string]bool{}, expect: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim(']'), json.Delim('}'):
			stack = stack[:len(stack)-1]
		}
		// A value ended: in an object the next token is a key again.
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].expect = true
		}
		if len(stack) == 0 {
			return "", false
		}
	}
}
