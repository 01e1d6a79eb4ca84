package eventlog

import "fmt"

// MaxTreeSize is the largest tree size the node takes from outside: from a
// checkpoint, a seal, a witness's request or answer, or an observer's stored
// state. golang.org/x/mod/sumdb/tlog loops forever on sizes above 2^62 (its
// power-of-two search overflows), and a JavaScript checker reads sizes as
// Numbers, exact only up to 2^53−1; no log holds that many records, so the
// smaller bound costs nothing and keeps the Go and JS checkers alike.
const MaxTreeSize int64 = 1<<53 - 1

// CheckTreeSize refuses a tree size that is negative or above MaxTreeSize.
// Every size that comes from outside the node passes here before it reaches
// any tlog call.
func CheckTreeSize(n int64) error {
	if n < 0 || n > MaxTreeSize {
		return fmt.Errorf("%w: %d is outside 0..%d", ErrTreeSize, n, MaxTreeSize)
	}
	return nil
}
