package projections

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/civnode/civnode/eventlog/events"
)

// stdJSON is v as encoding/json writes it where the models and the API encode:
// an Encoder without HTML escaping, its newline trimmed.
func stdJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// checkAppendJSON asserts that v's appender writes what encoding/json writes,
// after a prefix it must keep, and that it refuses exactly what encoding/json
// refuses: the appenders are complete, so a fallback is never needed for a
// value encoding/json can write.
func checkAppendJSON(t *testing.T, v jsonAppender) {
	t.Helper()
	want, stdErr := stdJSON(v)
	prefix := []byte("prefix")
	got, ok := v.AppendJSON(bytes.Clone(prefix))
	if !ok {
		if len(got) != len(prefix) {
			t.Fatalf("AppendJSON refused but left %d bytes, want %d", len(got), len(prefix))
		}
		if stdErr == nil {
			t.Fatalf("AppendJSON refused a value encoding/json writes as %s", want)
		}
		return
	}
	if stdErr != nil {
		t.Fatalf("AppendJSON wrote %s where encoding/json fails: %v", got, stdErr)
	}
	if !bytes.HasPrefix(got, prefix) {
		t.Fatalf("AppendJSON lost its prefix: %q", got)
	}
	if got = got[len(prefix):]; !bytes.Equal(got, want) {
		t.Fatalf("AppendJSON differs from encoding/json:\n got %s\nwant %s", got, want)
	}
}

// jsonSeeds are strings that take every path of appendString: unicode, HTML
// characters, quotes and backslashes, control characters, the JavaScript line
// separators, emoji, invalid UTF-8.
var jsonSeeds = []string{
	"", "plain ascii", "héllo wörld ✓", "<b>&amp;</b>", `say "hi" \ bye`,
	"tab\there\nnew\rline\b\f\x00\x01\x1f\x7f", "line\u2028para\u2029", "emoji 🚀🌍",
	"bad \xff\xfe utf8 \xe2\x80", "\xed\xa0\x80 surrogate", "2026-11-26T16:28:59.123456Z",
	"did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK",
}

var payloadSeeds = []string{
	`{}`, `{"a":1}`, ` { "a" : [1, 2 , "x y"] } `, `{"html":"<&>","u":"\u2028"}`, `[1,2`, ``,
	"{\"raw\":\"\u2028\"}", `"str"`, `null`, `{"a":1} {}`, "\t{\n}\r",
}

// fuzzMission builds a mission's state from fuzzed parts: the strings go to
// every string field in turn, the bits of mask decide which pointers are set,
// which omitempty fields are empty, what event_ids is, and whether the payload
// is nil.
func fuzzMission(a, b, c string, payload []byte, mask uint16, n1, n2 int64, seq uint64) *missionState {
	strs := []string{a, b, c}
	pick := func(i int) string { return strs[i%3] }
	ptr := func(bit uint, i int) *string {
		if mask&(1<<bit) == 0 {
			return nil
		}
		s := pick(i)
		return &s
	}
	m := &missionState{Seq: seq, MissionCreated: events.MissionCreated{
		MissionID: a, Title: b, Description: c, Publisher: a, PublisherKind: b, IssuerDID: c,
		Domain: a, SubnetID: b,
		ZoneID: ptr(0, 0), RequiredRole: ptr(1, 1), RequiredFaction: ptr(2, 2),
		Reward:  events.Reward{AgentCredit: n1, Reputation: n2, Capacity: -n1, TreasuryShareCredit: n1 ^ n2},
		Payload: payload,
	},
		State: c, Claimer: ptr(3, 0), CreatedAt: a, UpdatedAt: b,
		ClaimedAt: ptr(4, 1), CompletedAt: ptr(5, 2), SettledAt: ptr(6, 0),
	}
	if mask&(1<<7) != 0 {
		m.ClaimerDID = b
	}
	if mask&(1<<8) != 0 {
		m.SettledBy = c
	}
	m.Paid = mask&(1<<9) != 0
	switch (mask >> 10) & 3 {
	case 1:
		m.EventIDs = []string{}
	case 2:
		m.EventIDs = []string{a}
	case 3:
		m.EventIDs = []string{a, b, c}
	}
	if mask&(1<<12) != 0 {
		m.Payload = nil
	}
	return m
}

func addJSONSeeds(f *testing.F) {
	for i, s := range jsonSeeds {
		p := payloadSeeds[i%len(payloadSeeds)]
		f.Add(s, jsonSeeds[(i+1)%len(jsonSeeds)], jsonSeeds[(i+5)%len(jsonSeeds)], []byte(p),
			uint16(i*0x1357), int64(i*1000-5), int64(-1)<<63, uint64(i)<<60)
	}
	for i, p := range payloadSeeds {
		f.Add("a", "b", "c", []byte(p), uint16(0xffff>>i), int64(1)<<62, int64(i), uint64(i))
	}
}

func FuzzMissionStateJSON(f *testing.F) {
	addJSONSeeds(f)
	f.Fuzz(func(t *testing.T, a, b, c string, payload []byte, mask uint16, n1, n2 int64, seq uint64) {
		checkAppendJSON(t, fuzzMission(a, b, c, payload, mask, n1, n2, seq))
	})
}

func FuzzMissionRecordJSON(f *testing.F) {
	addJSONSeeds(f)
	f.Fuzz(func(t *testing.T, a, b, c string, payload []byte, mask uint16, n1, n2 int64, seq uint64) {
		m := fuzzMission(a, b, c, payload, mask, n1, n2, seq)
		var result *string
		if mask&(1<<13) != 0 {
			result = &c
		}
		checkAppendJSON(t, m.record(result))
		if len(m.EventIDs) > 0 {
			checkAppendJSON(t, m.supervised(result))
		}
	})
}

// typicalMissions are a mission as created, claimed, completed and settled,
// as the folds leave it.
func typicalMissions() []*missionState {
	str := func(s string) *string { return &s }
	m := &missionState{Seq: 42, MissionCreated: events.MissionCreated{
		MissionID: "019abcde-f012-7345-8678-9abcdef01234", Title: "Map the north ridge",
		Description: "Survey <all> the \"passes\" & report back.\nTwo lines. ✓",
		Publisher:   "acme-guild", PublisherKind: events.PublisherOrganization,
		IssuerDID: "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK",
		Domain:    "cartography", SubnetID: "north", RequiredRole: str("scout"),
		Reward:  events.Reward{AgentCredit: 100, Reputation: 5, Capacity: 1, TreasuryShareCredit: 10},
		Payload: json.RawMessage(`{"area":"ridge","priority":2}`),
	}, State: events.StateCreated, CreatedAt: "2026-11-26T16:28:59.123456Z",
		UpdatedAt: "2026-11-26T16:28:59.123456Z", EventIDs: []string{"0190-created"}}
	out := []*missionState{m}
	claimed := *m
	claimed.State, claimed.Claimer, claimed.ClaimerDID = events.StateClaimed, str("scout-7"), "did:key:z6Mkclaimer"
	claimed.ClaimedAt, claimed.UpdatedAt = str("2026-11-26T16:30:00Z"), "2026-11-26T16:30:00Z"
	claimed.EventIDs = append(m.EventIDs[:1:1], "0191-accepted")
	out = append(out, &claimed)
	completed := claimed
	completed.State, completed.CompletedAt = events.StateCompleted, str("2026-11-26T16:31:00Z")
	completed.EventIDs = append(claimed.EventIDs[:2:2], "0192-completed")
	out = append(out, &completed)
	settled := completed
	settled.State, settled.SettledAt, settled.SettledBy, settled.Paid = events.StateSettled,
		str("2026-11-26T16:32:00Z"), m.IssuerDID, true
	settled.EventIDs = append(completed.EventIDs[:3:3], "0193-settled", "0194-paid")
	return append(out, &settled)
}

func TestMissionJSONTypical(t *testing.T) {
	result := "the ridge is mapped"
	for _, m := range typicalMissions() {
		t.Run(m.State, func(t *testing.T) {
			for _, v := range []jsonAppender{m, m.record(nil), m.record(&result), m.supervised(&result)} {
				if _, ok := v.AppendJSON(nil); !ok {
					t.Fatalf("%T refused a typical value", v)
				}
				checkAppendJSON(t, v)
			}
		})
	}
}

func BenchmarkMissionStateJSON(b *testing.B) {
	m := typicalMissions()[3]
	benchmarkJSON(b, m)
}

func BenchmarkMissionRecordJSON(b *testing.B) {
	m := typicalMissions()[3]
	result := "the ridge is mapped"
	benchmarkJSON(b, m.record(&result))
}

// benchmarkJSON compares encoding/json with v's appender, each producing a
// slice of just the bytes, as encode stores it.
func benchmarkJSON(b *testing.B, v jsonAppender) {
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := stdJSON(v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("AppendJSON", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 4096)
		for b.Loop() {
			out, ok := v.AppendJSON(buf[:0])
			if !ok {
				b.Fatal("refused")
			}
			_ = bytes.Clone(out)
		}
	})
}
