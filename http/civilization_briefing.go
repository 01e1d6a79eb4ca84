package http

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
	"github.com/civnode/civnode/projections"
)

// Briefings count what happened in the last hours (default 24, 1..720) from the
// chain itself: every count is the total of an eventlog.Query with since = now −
// hours, read off the type index (no events are walked to count them), and the
// highlights are the newest events of the window, served verbatim as signed.

const (
	defaultBriefingHours = 24
	maxBriefingHours     = 720
	// briefingHighlights is how many of the window's newest events a briefing shows.
	briefingHighlights = 10
	// highlightScan bounds the walk back from the tip for highlights of chosen
	// types, so a briefing costs the same however long the window is.
	highlightScan = 256
)

// civilizationTypes are the event types the civilization briefing counts: the
// civilization layer's own activity (events.Type.Civilization).
var civilizationTypes = briefingTypes(true)

// supervisionTypes are every event type a node writes (events.Types): the
// operator's briefing counts them all.
var supervisionTypes = briefingTypes(false)

// briefingTypes lists the registry's types, only those of the civilization
// layer when civilization is set.
func briefingTypes(civilization bool) []string {
	var out []string
	for _, t := range events.Types() {
		if t.Civilization || !civilization {
			out = append(out, t.Name)
		}
	}
	return out
}

// briefingResponse is the body of both briefings.
type briefingResponse struct {
	Window briefingWindow `json:"window"`
	// TotalEvents counts every event in the window, of any type.
	TotalEvents uint64 `json:"total_events"`
	// Counts has one entry per type the briefing covers, 0 included.
	Counts map[string]uint64 `json:"counts"`
	// OtherEvents counts the window's events of types not in Counts.
	OtherEvents uint64 `json:"other_events"`
	// Highlights are up to 10 of the window's newest events of the covered types,
	// oldest first, exactly as GET /v1/events serves them.
	Highlights []json.RawMessage `json:"highlights"`
	// Identities is the number of identities now.
	Identities int `json:"identities"`
	// Credits is what the missions settled in the window paid: how many
	// settlements, the credits to agents, reputation, capacity and the credits
	// to subnet treasuries. Absent on a node without missions.
	Credits *projections.Paid `json:"credits,omitempty"`
	// Chain is the tip the briefing was computed at (supervision only).
	Chain *stateChain `json:"chain,omitempty"`
}

type briefingWindow struct {
	Hours int    `json:"hours"`
	Start string `json:"start"` // exclusive: events after it count
	End   string `json:"end"`   // the time of the request
}

func (s *Server) handleCivilizationBriefing(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	b, err := s.briefing(r.URL.Query(), civilizationTypes)
	if err != nil {
		return err
	}
	b.Chain = nil // the chain position is a supervision detail
	return writeJSON(w, b)
}

// briefing computes a briefing over types.
func (s *Server) briefing(q url.Values, types []string) (briefingResponse, error) {
	hours, err := queryHours(q)
	if err != nil {
		return briefingResponse{}, err
	}
	end := time.Now().UTC()
	start := end.Add(-time.Duration(hours) * time.Hour)
	b := briefingResponse{
		Window: briefingWindow{Hours: hours, Start: start.Format(eventlog.TimeLayout), End: end.Format(eventlog.TimeLayout)},
		Counts: make(map[string]uint64, len(types)), Highlights: []json.RawMessage{},
	}
	// Every count is taken over the chain as it stands now, so that the per-type
	// counts and the total agree however fast events arrive.
	tip := s.log.Tip()
	until := tip.Seq
	b.Chain = &stateChain{Seq: tip.Seq, TipHash: tip.ID, RootHash: s.log.RootHash()}
	var counted uint64
	for _, t := range types {
		_, n, err := s.log.Query(eventlog.Query{Since: start, Type: t, Until: until})
		if err != nil {
			return briefingResponse{}, fmt.Errorf("briefing: count %s: %w", t, err)
		}
		b.Counts[t] = n
		counted += n
	}
	first, total, err := s.log.Query(eventlog.Query{Since: start, Limit: 1, Until: until})
	if err != nil {
		return briefingResponse{}, fmt.Errorf("briefing: count events: %w", err)
	}
	b.TotalEvents = total
	if total > counted {
		b.OtherEvents = total - counted
	}
	if total > 0 {
		from, to := first[0].Seq, first[0].Seq+total-1
		if b.Highlights, err = s.highlights(from, to, types); err != nil {
			return briefingResponse{}, err
		}
	}
	if b.Identities, err = s.identities.Count(); err != nil {
		return briefingResponse{}, err
	}
	if s.missions != nil {
		paid, err := s.missions.PaidSince(start)
		if err != nil {
			return briefingResponse{}, err
		}
		b.Credits = &paid
	}
	return b, nil
}

// highlights returns the newest events of types among from..to, looking at no
// more than highlightScan events back from to.
func (s *Server) highlights(from, to uint64, types []string) ([]json.RawMessage, error) {
	if to-from+1 > highlightScan {
		from = to - highlightScan + 1
	}
	var out []json.RawMessage
	err := s.log.Scan(from, to, func(ev *eventlog.Event) error {
		if slices.Contains(types, ev.Type) {
			out = append(out, json.RawMessage(ev.Raw()))
			if len(out) > briefingHighlights {
				out = out[1:]
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("briefing: highlights: %w", err)
	}
	if out == nil {
		out = []json.RawMessage{}
	}
	return out, nil
}

// queryHours parses hours: an integer 1..720, default 24.
func queryHours(q url.Values) (int, error) {
	v, err := queryValue(q, "hours")
	if err != nil || v == "" {
		return defaultBriefingHours, err
	}
	n, perr := strconv.Atoi(v)
	if perr != nil || n < 1 || n > maxBriefingHours || strconv.Itoa(n) != v {
		return 0, invalidField("hours", "hours must be an integer from 1 to %d", maxBriefingHours)
	}
	return n, nil
}
