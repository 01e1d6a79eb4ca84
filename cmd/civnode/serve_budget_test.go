package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The response budget and the page budget through the real binary
// (docs/limits.md): --page-bytes 8 MiB, --response-budget 16 MiB, and 48
// missions whose results are 40,000 control characters, each 240 KB once
// escaped (\u0001), about 11.5 MB in all.
const (
	budgetTestPage    = 8 << 20
	budgetTestBudget  = 16 << 20
	budgetTestResults = 40000
	budgetTestCache   = 64 << 20 // eventlog's default block cache
)

// TestServeBudgetsWhatIsWritten: a page of the missions list is within
// --page-bytes as written, though its records' stored size is a sixth of it.
// Then clients that never read hold the response budget; while they do, many
// readers of full pages are answered 503 busy with Retry-After: 1 or served,
// never anything else, health answers every poll, and the node's RSS rises by
// at most the block cache and the budget, with slack for the runtime.
func TestServeBudgetsWhatIsWritten(t *testing.T) {
	p := startProcess(t, filepath.Join(t.TempDir(), "node"),
		"--page-bytes", strconv.Itoa(budgetTestPage), "--response-budget", strconv.Itoa(budgetTestBudget))
	budgetFill(t, p, 48)

	// Defect 6: the page ends at the budget as written.
	var got int
	cursor := ""
	for pages := 1; ; pages++ {
		q := "/v1/core/missions?state=completed&limit=1000"
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		status, body, _ := budgetGet(t, p, q)
		var page struct {
			Missions   []json.RawMessage `json:"missions"`
			NextCursor *string           `json:"next_cursor"`
		}
		if status != http.StatusOK || json.Unmarshal(body, &page) != nil {
			t.Fatalf("%s: %d %.200s", q, status, body)
		}
		if len(body) > budgetTestPage || len(page.Missions) == 0 {
			t.Fatalf("missions page %d: %d missions in %d bytes, --page-bytes %d", pages, len(page.Missions), len(body), budgetTestPage)
		}
		got += len(page.Missions)
		if page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
	}
	if got != 48 {
		t.Fatalf("paging the missions gave %d of 48", got)
	}

	// Defect 4: the response budget.
	base := processRSS(t, p)
	peak := base
	const path = "/v1/events?type=mission.completed&limit=1000"
	for range 3 { // two hold the budget; the third is refused or waits
		conn, err := net.Dial("tcp", strings.TrimPrefix(p.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", path, p.token)
	}
	var mu sync.Mutex
	counts := map[string]int{}
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for range 3 {
				status, body, h := budgetGet(t, p, path)
				key := strconv.Itoa(status)
				if status == http.StatusServiceUnavailable {
					var e struct{ Code string }
					json.Unmarshal(body, &e)
					key += " " + e.Code + " Retry-After=" + h.Get("Retry-After")
				}
				mu.Lock()
				counts[key]++
				mu.Unlock()
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	polls := 0
	for waiting := true; waiting; polls++ {
		select {
		case <-done:
			waiting = false
		case <-time.After(50 * time.Millisecond):
		}
		if status, body, _ := budgetGet(t, p, "/v1/health"); status != http.StatusOK {
			t.Fatalf("health while readers are held: %d %s", status, body)
		}
		peak = max(peak, processRSS(t, p))
	}
	t.Logf("answers: %v; %d health polls; RSS %d MB, peak %d MB", counts, polls, base>>20, peak>>20)
	for k := range counts {
		if k != "200" && k != "503 busy Retry-After=1" {
			t.Errorf("a reader was answered %s; want 200 or 503 busy with Retry-After: 1", k)
		}
	}
	if counts["503 busy Retry-After=1"] == 0 {
		t.Errorf("no reader was refused while never-reading clients held the response budget: %v", counts)
	}
	const slack = 64 << 20 // the runtime's own: goroutines, GC headroom, a page being built
	if rise := peak - base; rise > budgetTestCache+budgetTestBudget+slack {
		t.Errorf("RSS rose %d MB under the readers, more than the block cache (%d MB) and the response budget (%d MB) with %d MB of slack",
			rise>>20, budgetTestCache>>20, budgetTestBudget>>20, slack>>20)
	}
}

// budgetFill publishes, claims and completes n missions whose results are
// budgetTestResults control characters.
func budgetFill(t *testing.T, p *process, n int) {
	t.Helper()
	s := newSurvey(t, p.url, p.token)
	result := strings.Repeat("\x01", budgetTestResults)
	for range n {
		id := s.publish("Survey")
		s.claim(id)
		s.complete(id, result)
	}
}

// budgetGet GETs path with the owner token and reads the whole answer.
func budgetGet(t *testing.T, p *process, path string) (int, []byte, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, p.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+p.token)
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Errorf("GET %s: %v", path, err)
		return 0, nil, nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Errorf("GET %s: body: %v", path, err)
	}
	return resp.StatusCode, body, resp.Header
}

// processRSS is the resident set of p, from /proc/<pid>/status.
func processRSS(t *testing.T, p *process) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Fatalf("read the node's RSS from /proc (the test runs on Linux): %v", err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS line %q: %v", line, err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/<pid>/status")
	return 0
}
