package oraclesock

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// readLine reads one line of at most limit bytes, its newline excluded; a
// longer one is errRequestLarge.
func readLine(br *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(line)+len(frag) > limit+1 {
			return nil, errRequestLarge
		}
		line = append(line, frag...)
		switch {
		case err == nil:
			return bytes.TrimSuffix(line, []byte("\n")), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return nil, io.ErrUnexpectedEOF
		default:
			return nil, err
		}
	}
}
