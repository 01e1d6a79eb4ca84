package http

import (
	"errors"
	"net"
	"testing"
)

func TestSameAddr(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"127.0.0.1:7777", "127.0.0.1:7777", true},
		{"[::ffff:127.0.0.1]:7777", "127.0.0.1:7777", true},
		{"[::1]:7777", "[::1]:7777", true},
		{"127.0.0.1:7777", "127.0.0.1:7778", false},
		{"0.0.0.0:7777", "127.0.0.1:7777", false},
		{"[::]:7777", "[::1]:7777", false},
		{"127.0.0.2:7777", "127.0.0.1:7777", false},
	} {
		if got := sameAddr(tc.a, tc.b); got != tc.same {
			t.Errorf("sameAddr(%s, %s) = %v", tc.a, tc.b, got)
		}
	}
}

// TestMergedListener: connections to either listener come out of Accept, and
// after Close, Accept reports net.ErrClosed and both listeners are closed.
func TestMergedListener(t *testing.T) {
	var lns []net.Listener
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
	}
	m := MergeListeners(lns...)
	if m.Addr() != lns[0].Addr() {
		t.Errorf("Addr %v, want the first listener's %v", m.Addr(), lns[0].Addr())
	}
	for _, ln := range lns {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		got, err := m.Accept()
		if err != nil {
			t.Fatal(err)
		}
		if got.LocalAddr().String() != ln.Addr().String() {
			t.Errorf("accepted a connection to %v, want one to %v", got.LocalAddr(), ln.Addr())
		}
		got.Close()
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := m.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close: %v, want net.ErrClosed", err)
	}
	for _, ln := range lns {
		if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
			c.Close()
			t.Errorf("%v still accepts after Close", ln.Addr())
		}
	}
}
