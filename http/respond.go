package http

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
)

// marshalJSON encodes v without HTML escaping: event payloads and audit details
// are served byte for byte as stored (RFC 8785 does not escape <, > or &), and the
// API is never embedded in HTML.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeJSON answers 200 with v. It encodes v fully before writing anything, so an
// encoding error can still become a 500; the caller returns that error. The
// encoding goes into a pooled buffer: w copies what it is given (io.Writer's
// contract), so the buffer is free again once written.
func writeJSON(w http.ResponseWriter, v any) error {
	buf := jsonBuffers.Get().(*bytes.Buffer)
	defer putJSONBuffer(buf)
	if a, ok := v.(jsonAppender); ok {
		if out, ok := a.AppendJSON(buf.AvailableBuffer()); ok {
			buf.Write(out)
			buf.WriteByte('\n') // as Encode ends what it writes
			writeBody(w, http.StatusOK, buf.Bytes())
			return nil
		}
	}
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	writeBody(w, http.StatusOK, buf.Bytes())
	return nil
}

// jsonAppender is a value that appends its own JSON, byte for byte as
// encoding/json writes it without HTML escaping (a mission record), sparing
// writeJSON the reflection; ok is false when it cannot, and writeJSON then
// encodes the value with encoding/json.
type jsonAppender interface {
	AppendJSON(dst []byte) ([]byte, bool)
}

// jsonBuffers are writeJSON's buffers. One that grew past maxPooledJSON (a
// list page) is left to the collector rather than kept for the next small
// answer.
var jsonBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledJSON = 64 << 10

func putJSONBuffer(buf *bytes.Buffer) {
	if buf.Cap() > maxPooledJSON {
		return
	}
	buf.Reset()
	jsonBuffers.Put(buf)
}

// setJSONHeaders marks a response as JSON that no cache or sniffer may reinterpret;
// responses carry node state that changes with every event.
func setJSONHeaders(h http.Header) {
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
}

// writeBody writes an encoded JSON body. A write error means the client has gone;
// there is no one left to tell.
func writeBody(w http.ResponseWriter, status int, body []byte) {
	setJSONHeaders(w.Header())
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// PageTruncatedHeader is set to "true" on a list response whose byte budget
// (Options.PageBytes) ended the page before its limit. The body is unchanged: a
// client continues from the last item it got, exactly as after a full page.
const PageTruncatedHeader = "X-Civnode-Page-Truncated"

// listWriter writes the items of a list response to w, each separated by a comma,
// and ends the page at a byte budget: an item that would take the body over the
// budget is not written, so a page never holds a cut item, and the first item is
// always written, so a page makes progress even when one item alone is over the
// budget. The caller writes the body's opening before the first item and its
// closing after the last.
type listWriter struct {
	w      io.Writer
	budget int  // bytes left for items and their separators
	items  int  // items written
	full   bool // an item was refused
}

// newListWriter budgets a body of at most budget bytes, of which the opening
// (written by the caller) takes open bytes and the closing at most closeMax.
func newListWriter(w io.Writer, budget, open, closeMax int) *listWriter {
	return &listWriter{w: w, budget: budget - open - closeMax}
}

// add writes item if it fits. It returns false once the page is full, and a
// write error as is (the client has gone or the handler timed out), so a loop
// over records stops on either.
func (p *listWriter) add(item []byte) (bool, error) {
	size := len(item)
	if p.items > 0 {
		size++ // the comma
	}
	if p.items > 0 && size > p.budget {
		p.full = true
		return false, nil
	}
	if p.items > 0 {
		if _, err := p.w.Write(comma); err != nil {
			return false, err
		}
	}
	if _, err := p.w.Write(item); err != nil {
		return false, err
	}
	p.budget -= size
	p.items++
	return true, nil
}

var comma = []byte{','}

// listFrameMax bounds what a list answered with writeJSON adds around its
// items: {"missions":[ … ],"next_cursor":"<cursor>"} and a newline, or the
// members around the supervision home's active missions. The projections
// count each item as written, comma included (projections.Page), so items
// within itemBytes make a body within the page budget.
const listFrameMax = 1024

// itemBytes is the page budget left for the items of a list that writeJSON
// frames.
func (s *Server) itemBytes(ctx context.Context) int {
	return max(1, s.pageBudget(ctx)-listFrameMax)
}
