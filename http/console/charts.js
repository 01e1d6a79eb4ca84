// charts.js: the console's charts, drawn as inline SVG from data the console
// already read from the API; no charting library, no build step. Each chart is
// drawn at the width of its box (so its text stays legible on a phone) and
// comes with a sentence that says what it shows and a table of its data, for
// anyone who cannot see it. Colours are set by class in console.css, and each
// series also differs by dash or position, never by colour alone.

import { h, s, num } from "./dom.js";

export const STATES = ["created", "claimed", "completed", "settled"];

let ids = 0;
const nextId = (p) => `${p}-${++ids}`;

// niceMax rounds a maximum up to 1, 2 or 5 times a power of ten.
export function niceMax(v) {
  if (!(v > 1)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  const m = v / p;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

const hhmm = (t) => new Date(t).toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" });

function clock(t, span) {
  const d = new Date(t);
  if (span > 2 * 86400e3) return d.toLocaleDateString(undefined, { month: "short", day: "numeric" });
  return d.toLocaleTimeString(undefined, span > 3600e3 ? { hour: "2-digit", minute: "2-digit" }
    : { hour: "2-digit", minute: "2-digit", second: "2-digit" });
}

function frame(width, height, titleText, descText, ...children) {
  const t = nextId("chart-title");
  const d = nextId("chart-desc");
  return s("svg", { class: "chart-svg", width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-labelledby": `${t} ${d}` },
    s("title", { id: t }, titleText), s("desc", { id: d }, descText), ...children);
}

// yAxis draws three gridlines, at 0, half the maximum and the maximum.
function yAxis(x0, x1, y, max) {
  return [0, max / 2, max].map((v) => {
    const yy = y(v);
    return s("g", { class: "axis" },
      s("line", { class: "grid", x1: x0, x2: x1, y1: yy, y2: yy }),
      s("text", { x: x0 - 6, y: yy + 4, "text-anchor": "end" }, num(Math.round(v * 100) / 100)),
    );
  });
}

function table(caption, head, rows) {
  return h("details", { class: "chart-data" },
    h("summary", null, "Show the data"),
    h("div", { class: "table-wrap" },
      h("table", null,
        h("caption", { class: "visually-hidden" }, caption),
        h("thead", null, h("tr", null, head.map((c, i) => h("th", { scope: "col", class: i ? "num" : null }, c)))),
        h("tbody", null, rows.map((r) => h("tr", null, r.map((c, i) => (i ? h("td", { class: "num" }, c) : h("th", { scope: "row" }, c)))))),
      )));
}

function legend(items) {
  return h("ul", { class: "legend" }, items.map(([cls, label]) => h("li", null, h("span", { class: `swatch ${cls}`, "aria-hidden": "true" }), label)));
}

// rateChart draws events per minute: buckets [{t, count}] oldest first, the
// last being the current minute.
export function rateChart(width, buckets) {
  const height = 170;
  const m = { l: 44, r: 10, t: 10, b: 24 };
  const total = buckets.reduce((a, b) => a + b.count, 0);
  const busiest = buckets.reduce((a, b) => (b.count > a.count ? b : a), buckets[0]);
  const max = niceMax(busiest.count);
  const pw = width - m.l - m.r;
  const ph = height - m.t - m.b;
  const y = (v) => m.t + ph - (v / max) * ph;
  const bw = pw / buckets.length;
  const sentence = total === 0 ? "No events in the last hour."
    : `${num(total)} event${total === 1 ? "" : "s"} in the last hour; the busiest minute, ${hhmm(busiest.t)}, had ${num(busiest.count)}.`;
  const svg = frame(width, height, "Events per minute, last hour", sentence,
    yAxis(m.l, width - m.r, y, max),
    buckets.map((b, i) => b.count > 0 && s("rect", {
      class: "bar", x: m.l + i * bw + 0.5, width: Math.max(bw - 1, 1), y: y(b.count), height: m.t + ph - y(b.count),
    }, s("title", null, `${hhmm(b.t)}: ${num(b.count)}`))),
    [[0, "−60 min"], [30, "−30 min"], [buckets.length - 1, "now"]].map(([i, label]) =>
      s("text", { class: "axis-label", x: m.l + i * bw + bw / 2, y: height - 6, "text-anchor": i === 0 ? "start" : i === buckets.length - 1 ? "end" : "middle" }, label)),
  );
  const rows = buckets.filter((b) => b.count > 0).map((b) => [hhmm(b.t), num(b.count)]);
  return [h("p", { class: "chart-summary" }, sentence), svg,
    table("Events per minute", ["Minute", "Events"], rows.length ? rows : [["(none)", "0"]])];
}

// statesChart draws how many missions were in each state over [start, end]:
// at(t) is the count by state at time t.
export function statesChart(width, start, end, at, note) {
  const height = 190;
  const m = { l: 44, r: 12, t: 10, b: 24 };
  const n = 120;
  const span = Math.max(end - start, 1);
  const samples = Array.from({ length: n + 1 }, (_, i) => {
    const t = start + (span * i) / n;
    return { t, counts: at(t) };
  });
  const max = niceMax(Math.max(1, ...samples.flatMap((p) => STATES.map((st) => p.counts[st]))));
  const pw = width - m.l - m.r;
  const ph = height - m.t - m.b;
  const x = (t) => m.l + ((t - start) / span) * pw;
  const y = (v) => m.t + ph - (v / max) * ph;
  const now = samples[n].counts;
  const sentence = `Now: ${STATES.map((st) => `${num(now[st])} ${st}`).join(", ")}.${note ? ` ${note}` : ""}`;
  const lines = STATES.map((st) => {
    let d = "";
    samples.forEach((p, i) => {
      const yy = y(p.counts[st]).toFixed(1);
      d += i === 0 ? `M${x(p.t).toFixed(1)},${yy}` : `H${x(p.t).toFixed(1)}V${yy}`;
    });
    return s("path", { class: `line c-${st}`, d });
  });
  const svg = frame(width, height, "Missions by state over time", sentence,
    yAxis(m.l, width - m.r, y, max),
    lines,
    s("text", { class: "axis-label", x: m.l, y: height - 6, "text-anchor": "start" }, clock(start, span)),
    s("text", { class: "axis-label", x: width - m.r, y: height - 6, "text-anchor": "end" }, "now"),
  );
  const rows = [0, 20, 40, 60, 80, 100, 120].map((i) => [clock(samples[i].t, span), ...STATES.map((st) => num(samples[i].counts[st]))]);
  return [h("p", { class: "chart-summary" }, sentence), svg,
    legend(STATES.map((st) => [`c-${st}`, st])),
    table("Missions by state over time", ["Time", ...STATES], rows)];
}

// creditsChart draws credits paid per subnet: rows [{subnet, agent, treasury}].
export function creditsChart(width, rows) {
  if (rows.length === 0) return [h("p", { class: "chart-summary" }, "No mission has been settled yet.")];
  const shown = rows.slice(0, 12);
  const barH = 18;
  const gap = 10;
  const m = { l: Math.min(110, width * 0.3), r: 64, t: 6, b: 6 };
  const height = m.t + m.b + shown.length * (barH + gap);
  const max = Math.max(1, ...shown.map((r) => r.agent + r.treasury));
  const pw = Math.max(width - m.l - m.r, 10);
  const w = (v) => (v / max) * pw;
  const total = rows.reduce((a, r) => a + r.agent + r.treasury, 0);
  const sentence = `${num(total)} credits paid by settlements across ${rows.length} subnet${rows.length === 1 ? "" : "s"}; most to ${rows[0].subnet} (${num(rows[0].agent + rows[0].treasury)}).`;
  const maxChars = Math.max(4, Math.floor(m.l / 7.5));
  const svg = frame(width, height, "Credits paid per subnet", sentence,
    shown.map((r, i) => {
      const yy = m.t + i * (barH + gap);
      const label = r.subnet.length > maxChars ? `${r.subnet.slice(0, maxChars - 1)}…` : r.subnet;
      return s("g", null,
        s("text", { class: "bar-label", x: m.l - 6, y: yy + barH / 2 + 4, "text-anchor": "end" }, s("title", null, r.subnet), label),
        s("rect", { class: "bar c-agent", x: m.l, y: yy, width: w(r.agent), height: barH },
          s("title", null, `${r.subnet}: ${num(r.agent)} to agents`)),
        s("rect", { class: "bar c-treasury", x: m.l + w(r.agent), y: yy, width: w(r.treasury), height: barH },
          s("title", null, `${r.subnet}: ${num(r.treasury)} to the treasury`)),
        s("text", { class: "bar-value", x: m.l + w(r.agent + r.treasury) + 6, y: yy + barH / 2 + 4 }, num(r.agent + r.treasury)),
      );
    }),
  );
  return [h("p", { class: "chart-summary" }, sentence), svg,
    legend([["c-agent", "to the completing agents"], ["c-treasury", "to the subnet's treasury"]]),
    table("Credits paid per subnet", ["Subnet", "To agents", "To treasury", "Total"],
      rows.map((r) => [r.subnet, num(r.agent), num(r.treasury), num(r.agent + r.treasury)]))];
}
