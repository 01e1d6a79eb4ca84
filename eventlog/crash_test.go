package eventlog

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// crashChildEnv makes the test binary act as the crash test's child process.
const crashChildEnv = "EVENTLOG_CRASH_CHILD_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(dir)
		return
	}
	os.Exit(m.Run())
}

// crashChild appends from 16 goroutines forever, printing "ack <seq> <id>" for
// each event as soon as its Append has returned, that is, once it is durable.
func crashChild(dir string) {
	l, err := Open(Options{Dir: dir, Key: crashKey()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		os.Exit(2)
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	for w := range 16 {
		go func() {
			for i := 0; ; i++ {
				evs, err := l.Append(context.Background(),
					Draft{Type: "test.crash", Payload: map[string]any{"w": w, "i": i, "pad": strings.Repeat("x", i%200)}})
				if err != nil {
					fmt.Fprintln(os.Stderr, "child append:", err)
					os.Exit(3)
				}
				mu.Lock()
				for _, ev := range evs {
					fmt.Fprintf(out, "ack %d %s\n", ev.Seq, ev.ID)
				}
				out.Flush()
				mu.Unlock()
			}
		}()
	}
	select {}
}

func crashKey() ed25519.PrivateKey {
	return seedKeyNoT("2222222222222222222222222222222222222222222222222222222222222222")
}

// TestCrashKill9 runs a real child process appending concurrently, kills it with
// SIGKILL at an arbitrary moment, and requires that every event it acknowledged is
// in the reopened chain at its seq and that the whole chain verifies. It repeats on
// the same directory so later rounds also crash a chain that survived a crash.
func TestCrashKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: SIGKILL rounds of a child process; the full suite runs them")
	}
	dir := t.TempDir()
	acked := map[uint64]string{}
	for round := range 4 {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killAfter := 300 + round*700 // acks to see before the kill
		sc := bufio.NewScanner(stdout)
		seen := 0
		deadline := time.AfterFunc(60*time.Second, func() { cmd.Process.Kill() })
		for sc.Scan() {
			var seq uint64
			var id string
			if _, err := fmt.Sscanf(sc.Text(), "ack %d %s", &seq, &id); err != nil {
				t.Fatalf("child said %q", sc.Text())
			}
			acked[seq] = id
			if seen++; seen == killAfter {
				cmd.Process.Signal(syscall.SIGKILL)
			}
		}
		io.Copy(io.Discard, stdout)
		cmd.Wait()
		deadline.Stop()
		if seen < killAfter {
			t.Fatalf("round %d: child stopped after %d acks", round, seen)
		}

		l, err := Open(Options{Dir: dir, Key: crashKey()})
		if err != nil {
			t.Fatalf("round %d: reopen after SIGKILL: %v", round, err)
		}
		rep, err := l.Verify(context.Background(), nil)
		if err != nil {
			l.Close()
			t.Fatalf("round %d: verify after SIGKILL: %v", round, err)
		}
		for seq, id := range acked {
			ev, err := l.Event(seq)
			if err != nil || ev.ID != id {
				l.Close()
				t.Fatalf("round %d: acknowledged seq %d lost or changed (err %v)", round, seq, err)
			}
		}
		t.Logf("round %d: %d acknowledged, %d in chain", round, len(acked), rep.Events)
		l.Close()
	}
}
