package bench

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// row is one figure of the report: its JSON key (also its name in the
// table), the reference limit of the same run it is read against, the key of
// the ratio figure/limit, and its target in words.
type row struct {
	section string // starts a section of the table when set; no figure
	key     string
	unit    string
	limit   string
	ratio   string
	target  string
	managed bool // measured only on a node bench started (not with --node)
	hostile bool // measured only with --hostile
	peer    bool // measured only with --peer
}

// contextKeys are figures that describe the run rather than measure the node.
var contextKeys = []string{"cpus", "chain_events", "fill_per_s"}

var baseRows = []row{
	{section: "reference limits, measured idle before any load"},
	{key: "sign_per_s", unit: "/s"},
	{key: "sign_cores_per_s", unit: "/s"},
	{key: "verify_per_s", unit: "/s"},
	{key: "pebble_sync_write_ms", unit: "ms"},
	{key: "pebble_sync_writes_per_s", unit: "/s"},
	{key: "http_limit_per_s", unit: "/s"},
	{key: "http_limit_signed_per_s", unit: "/s"},

	{section: "node"},
	{key: "append_per_s", unit: "/s", limit: "sign_cores_per_s", ratio: "append_x_sign_cores", target: "≥ 0.8 × sign, all cores"},
	{key: "http_create_seq_per_s", unit: "/s", limit: "pebble_sync_writes_per_s", ratio: "http_create_seq_x_sync_write", target: "≥ 2,000/s"},
	{key: "http_create_seq_p50_ms", unit: "ms", target: "< 1 ms"},
	{key: "http_create_c64_per_s", unit: "/s", limit: "http_limit_signed_per_s", ratio: "http_create_c64_x_http_limit", target: "≥ 10,000/s"},
	{key: "http_create_c64_p99_ms", unit: "ms", target: "< 25 ms"},
	{key: "http_create_c64_node_cpu_us", unit: "µs", target: "≤ 250 µs at 1M events", managed: true},
	{key: "fill_first_per_s", unit: "/s"},
	{key: "fill_last_per_s", unit: "/s", limit: "fill_first_per_s", ratio: "fill_last_x_first", target: "≥ 0.9 × first at 1M events"},
	{key: "events_since_c16_per_s", unit: "/s", target: "≥ 150,000/s at 1M events"},
	{key: "events_since_c16_p99_ms", unit: "ms", target: "< 25 ms at 1M events"},
	{key: "verify_chain_per_s", unit: "/s", limit: "verify_per_s", ratio: "verify_chain_x_verify", target: "≥ 0.9 × verify", managed: true},
	{key: "restart_s", unit: "s", target: "< 3 s at 1M events", managed: true},
	{key: "rss_after_restart_mb", unit: "MB", target: "< 300 MB at 1M events", managed: true},
	{key: "rss_under_readers_mb", unit: "MB", target: "< 300 MB at 1M events", managed: true},
	{key: "rss_peak_mb", unit: "MB", target: "< 300 MB at 1M events", managed: true},

	{section: "state commitments (docs/state-proofs.md): 64 clients creating, then proofs from one client"},
	{key: "state_create_c64_per_s", unit: "/s", limit: "http_limit_signed_per_s", ratio: "state_create_c64_x_http_limit"},
	{key: "state_lag_p50_ms", unit: "ms"},
	{key: "state_lag_p99_ms", unit: "ms", target: "≤ 2,000 ms"},
	{key: "state_entries", unit: ""},
	{key: "state_proof_p50_ms", unit: "ms", limit: "pebble_sync_write_ms", ratio: "state_proof_p50_x_sync_write"},
	{key: "state_proof_p99_ms", unit: "ms", target: "< 5 ms at 1M missions"},

	{section: "stream: 100 WebSocket clients of GET /v1/stream, missions created at 1k/s"},
	{key: "stream_events_per_s", unit: "/s", target: "1,000/s offered"},
	{key: "stream_delivery_p50_ms", unit: "ms", limit: "pebble_sync_write_ms", ratio: "stream_delivery_p50_x_sync_write"},
	{key: "stream_delivery_p99_ms", unit: "ms", target: "< 10 ms"},
	{key: "stream_clients_dropped", unit: "", target: "0"},
	{key: "stream_create_p99_ms", unit: "ms"},
	{key: "stream_creates_missed", unit: "", target: "0"},
	{key: "stream_node_cores", unit: "cores", managed: true},
	{key: "stream_node_cpu_us_per_event", unit: "µs", managed: true},
}

// rows are the rows of the report, in order.
var rows = slices.Concat(baseRows, peerRows, hostileRows())

// hostileRows are the hostile phase's: what it filled and the allowance, then a
// section for each of hostileLevels.
func hostileRows() []row {
	rows := []row{
		{section: fmt.Sprintf("hostile: %d completed missions of ~1 MiB, full pages of them", hostileMissions), hostile: true},
		{key: "hostile_completed_mb", unit: "MB", hostile: true},
		{key: "hostile_rss_allowance_mb", unit: "MB", target: "block cache + response budget", hostile: true},
		{key: "hostile_rss_before_mb", unit: "MB", hostile: true, managed: true},
		{key: "hostile_rss_capped", unit: "", hostile: true, managed: true},
	}
	for _, n := range hostileLevels {
		key := func(f string) string { return hostileKey(n, f) }
		rows = append(rows,
			row{section: fmt.Sprintf("hostile: %d readers of full pages, %d clients that never read, health polled", n, hostileStalled), hostile: true},
			row{key: key("rss_rise_mb"), unit: "MB", limit: "hostile_rss_allowance_mb", ratio: key("rss_rise_x_allowance"),
				target: "≤ block cache + response budget", hostile: true, managed: true},
			row{key: key("rss_peak_mb"), unit: "MB", hostile: true, managed: true},
			row{key: key("health_p99_ms"), unit: "ms", target: "< 50 ms", hostile: true},
			row{key: key("health_max_ms"), unit: "ms", hostile: true},
			row{key: key("health_failures"), unit: "", target: "0", hostile: true},
			row{key: key("pages_per_s"), unit: "/s", hostile: true},
			row{key: key("read_mb_per_s"), unit: "MB/s", hostile: true},
			row{key: key("busy"), unit: "", hostile: true},
			row{key: key("read_errors"), unit: "", target: "0", hostile: true},
		)
	}
	return rows
}

// Results holds the figures of a run by key, and the run's Config, which the
// table's heading states.
type Results struct {
	cfg  Config
	vals map[string]float64
}

func newResults(cfg Config) *Results { return &Results{cfg: cfg, vals: map[string]float64{}} }

func (r *Results) set(key string, v float64) { r.vals[key] = v }

func (r *Results) get(key string) float64 { return r.vals[key] }

func (r *Results) has(key string) bool {
	_, ok := r.vals[key]
	return ok
}

// ratios adds every ratio whose figure and limit were both measured.
func (r *Results) ratios() {
	for _, row := range rows {
		if row.ratio != "" && r.has(row.key) && r.get(row.limit) > 0 {
			r.set(row.ratio, r.get(row.key)/r.get(row.limit))
		}
	}
}

// WriteJSON prints one object holding every measured figure, in report order.
func (r *Results) WriteJSON(w io.Writer) error {
	r.ratios()
	var keys []string
	keys = append(keys, contextKeys...)
	for _, row := range rows {
		if row.key != "" {
			keys = append(keys, row.key)
		}
		if row.ratio != "" {
			keys = append(keys, row.ratio)
		}
	}
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	for _, k := range keys {
		if !r.has(k) {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		fmt.Fprintf(&b, "%q:%s", k, jsonNumber(r.get(k)))
	}
	b.WriteString("}\n")
	_, err := w.Write(b.Bytes())
	return err
}

// jsonNumber keeps three decimals, which is more than a noisy machine's figures
// hold; a value JSON cannot hold is written as 0.
func jsonNumber(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "0"
	}
	return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
}

// WriteTable prints each figure beside its limit of the same run, the ratio of
// the two and the target.
func (r *Results) WriteTable(w io.Writer) error {
	cfg := r.cfg
	r.ratios()
	var b bytes.Buffer
	fmt.Fprintf(&b, "civnode bench: %d CPUs, chain of %s events", int(r.get("cpus")), human(r.get("chain_events")))
	if r.has("fill_per_s") {
		fmt.Fprintf(&b, " (filled with %s missions at %s/s)", human(float64(cfg.Events)), human(r.get("fill_per_s")))
	}
	fmt.Fprintf(&b, ", %v a phase\n", cfg.Duration)
	if cfg.Node != "" {
		fmt.Fprintf(&b, "node %s: restart, RSS and verify are measured only on a node bench starts\n", cfg.Node)
	}
	var t textTable
	for _, br := range rows {
		if br.hostile && !cfg.Hostile || br.peer && len(cfg.Peers) == 0 {
			continue
		}
		if br.section != "" {
			t.section(br.section)
			t.add("figure", "value", "", "limit (same run)", "ratio", "target")
			continue
		}
		value, unit := "skipped", ""
		switch {
		case r.has(br.key) && br.unit == "": // a count
			value = human(math.Round(r.get(br.key)))
		case r.has(br.key):
			value, unit = human(r.get(br.key)), br.unit
		}
		if !r.has(br.key) && br.managed && cfg.Node != "" {
			value = "—"
		}
		limit, ratio := "", ""
		if br.limit != "" {
			limit = br.limit + " " + human(r.get(br.limit))
			if r.has(br.ratio) {
				ratio = fmt.Sprintf("%.2f", r.get(br.ratio))
			}
		}
		t.add(br.key, value, unit, limit, ratio, br.target)
	}
	if err := t.write(&b); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}

// textTable lays out rows in columns two spaces apart with text/tabwriter; a
// section title takes a line of its own after a blank line, and starts the
// section's own column widths.
type textTable struct {
	rows [][]string // a row of one cell is a section title
}

func (t *textTable) section(title string) { t.rows = append(t.rows, []string{title}) }

func (t *textTable) add(cells ...string) { t.rows = append(t.rows, cells) }

// write ends every cell with a tab, so that an empty last cell still holds
// its column, and trims the padding this leaves at the end of a line.
func (t *textTable) write(w io.Writer) error {
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, r := range t.rows {
		if len(r) == 1 {
			fmt.Fprintf(tw, "\n%s\n", r[0])
			continue
		}
		fmt.Fprintf(tw, "  %s\t\n", strings.Join(r, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for line := range strings.Lines(b.String()) {
		if _, err := io.WriteString(w, strings.TrimRight(line, " \n")+"\n"); err != nil {
			return err
		}
	}
	return nil
}

// human formats a figure for the table: thousands separated above 1,000, three
// significant digits below.
func human(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1000:
		s := strconv.FormatInt(int64(math.Round(v)), 10)
		var out []byte
		for i, c := range []byte(s) {
			if i > 0 && (len(s)-i)%3 == 0 && s[i-1] != '-' {
				out = append(out, ',')
			}
			out = append(out, c)
		}
		return string(out)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case v == math.Trunc(v):
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}
