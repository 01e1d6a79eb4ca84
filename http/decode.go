package http

import (
	"errors"
	"io"
	"net/http"

	"github.com/civnode/civnode/internal/ijson"
)

// decodeJSON reads r's body into dst, which must be a pointer to a struct. The body
// must be exactly one I-JSON value (RFC 7493; internal/ijson), no larger than the
// body limit, with no field that dst does not declare: a typo such as agent_credits
// must fail loudly instead of silently becoming 0 (docs/api.md). Every failure is an
// *Error for the client, except a dst that cannot be decoded into at all, which is a
// programming error (500).
func (s *Server) decodeJSON(w http.ResponseWriter, r *http.Request, dst any) error {
	body, err := readBody(http.MaxBytesReader(w, r.Body, s.bodyLimit), sizeHint(r.ContentLength, s.bodyLimit))
	if err != nil {
		return readError(err)
	}
	return decodeBody(body, dst)
}

// sizeHint is the buffer readBody starts with for a body of declared length n
// (-1: unknown) under limit: room for the whole body and the read that finds
// its end, so a body that is as long as it says is read in one buffer,
// without the doublings of io.ReadAll; at least io.ReadAll's first 512 bytes.
// A length over the limit is not trusted with an allocation; the limit
// refuses such a body anyway.
func sizeHint(n, limit int64) int {
	if n < 0 || n > limit {
		return 512
	}
	return max(int(n)+1, 512)
}

// readBody is io.ReadAll starting from a buffer of size bytes.
func readBody(r io.Reader, size int) ([]byte, error) {
	b := make([]byte, 0, size)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// decodeBody decodes body, a whole request body, into dst by the one rule for
// JSON a client sends (internal/ijson): one I-JSON value, names matched
// exactly, unknown members refused. Every refusal is the client's to fix: 400.
func decodeBody(body []byte, dst any) error {
	return clientError(ijson.Decode(body, dst))
}

// clientError is err, a result of the I-JSON codec, with a refusal as the
// 400 *Error the client is sent.
func clientError(err error) error {
	var e *ijson.Error
	if errors.As(err, &e) {
		return codecError(e)
	}
	return err
}

// readError classifies a failure to read the body.
func readError(err error) error {
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return bodyTooLarge(tooLarge.Limit)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return invalidJSON("request body ends before its declared length")
	}
	return invalidJSON("request body could not be read: %v", err)
}
