package statemap

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// ParseProof reads a proof's JSON object strictly: exactly the fields
// "siblings" (required, an array of at most Depth hashes), and "key_hash"
// with "value_hash" (together or not at all), each once, spelt exactly, each
// hash 32 bytes of standard base64, and nothing after the object. A proof
// embedded in a larger answer is read by encoding/json through Proof's
// tags and checked by VerifyHash, which refuses the same shapes.
func ParseProof(data []byte) (Proof, error) {
	var p Proof
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := expectDelim(dec, '{'); err != nil {
		return Proof{}, err
	}
	seen := make(map[string]bool)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return Proof{}, fmt.Errorf("%w: %v", ErrProofFormat, err)
		}
		name, _ := tok.(string)
		if seen[name] {
			return Proof{}, fmt.Errorf("%w: field %q twice", ErrProofFormat, name)
		}
		seen[name] = true
		switch name {
		case "siblings":
			if p.Siblings, err = readHashes(dec); err != nil {
				return Proof{}, err
			}
		case "key_hash":
			if p.KeyHash, err = readHash(dec); err != nil {
				return Proof{}, err
			}
		case "value_hash":
			if p.ValueHash, err = readHash(dec); err != nil {
				return Proof{}, err
			}
		default:
			return Proof{}, fmt.Errorf("%w: field %q", ErrProofFormat, name)
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return Proof{}, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Proof{}, fmt.Errorf("%w: data after the proof", ErrProofFormat)
	}
	if !seen["siblings"] {
		return Proof{}, fmt.Errorf("%w: no siblings", ErrProofFormat)
	}
	if (p.KeyHash == nil) != (p.ValueHash == nil) {
		return Proof{}, fmt.Errorf("%w: key_hash and value_hash go together", ErrProofFormat)
	}
	return p, nil
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrProofFormat, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("%w: %v where %v belongs", ErrProofFormat, tok, want)
	}
	return nil
}

func readHashes(dec *json.Decoder) ([]Hash, error) {
	if err := expectDelim(dec, '['); err != nil {
		return nil, err
	}
	hs := []Hash{}
	for dec.More() {
		if len(hs) == Depth {
			return nil, fmt.Errorf("%w: more than %d siblings", ErrProofFormat, Depth)
		}
		h, err := readHash(dec)
		if err != nil {
			return nil, err
		}
		hs = append(hs, *h)
	}
	return hs, expectDelim(dec, ']')
}

func readHash(dec *json.Decoder) (*Hash, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrProofFormat, err)
	}
	s, ok := tok.(string)
	if !ok {
		return nil, fmt.Errorf("%w: %v where a hash belongs", ErrProofFormat, tok)
	}
	var h Hash
	if err := h.UnmarshalText([]byte(s)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrProofFormat, err)
	}
	return &h, nil
}
