// dom.js: building the page from nodes and text, never from HTML strings.
// Nothing the node sends is ever parsed as markup, and the console's CSP
// (trusted-types 'none') refuses innerHTML and its kin anyway. Styles are set
// by class, never by a style attribute, which style-src 'self' refuses.

const SVG_NS = "http://www.w3.org/2000/svg";

function build(el, attrs, children) {
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") el.setAttribute("class", Array.isArray(v) ? v.filter(Boolean).join(" ") : v);
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k === "on") for (const [type, fn] of Object.entries(v)) el.addEventListener(type, fn);
    else if (k === "style") throw new Error("style attributes are refused by the CSP; use a class");
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
}

// h makes an HTML element: h("p", {class: "x"}, "text", child, …).
export function h(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

// s makes an SVG element.
export function s(tag, attrs, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

// fill replaces the children of el.
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

const numberFormat = new Intl.NumberFormat();

export function num(n) {
  return typeof n === "number" ? numberFormat.format(n) : "–";
}

// short abbreviates a hash or DID for display; the whole value goes in a
// title and in the text a screen reader or a copy gets (see code()).
export function short(v, head = 10, tail = 6) {
  if (typeof v !== "string") return "–";
  return v.length <= head + tail + 1 ? v : `${v.slice(0, head)}…${v.slice(-tail)}`;
}

// code shows a long identifier abbreviated, with the whole of it in the title
// (hover) and in text only a screen reader reads, so nothing is lost to anyone.
export function code(v, head, tail) {
  if (typeof v !== "string") return h("span", { class: "muted" }, "–");
  const abbreviated = short(v, head, tail);
  if (abbreviated === v) return h("code", { class: "ident" }, v);
  return h("code", { class: "ident", title: v },
    h("span", { "aria-hidden": "true" }, abbreviated), h("span", { class: "visually-hidden" }, v));
}

// time formats an RFC 3339 timestamp as local time, keeping the original in a
// <time> element.
export function time(ts, withDate = false) {
  const d = new Date(ts);
  if (Number.isNaN(d.getTime())) return h("span", { class: "muted" }, "–");
  const text = withDate
    ? d.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "medium" })
    : d.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  return h("time", { datetime: ts, title: ts }, text);
}

// facts fills a <dl> with [term, value] rows.
export function facts(dl, rows) {
  return fill(dl, rows.filter(Boolean).map(([term, value]) => [h("dt", null, term), h("dd", null, value)]));
}

// notice is a panel's whole content when it cannot show its data.
export function notice(text, kind = "muted") {
  return h("p", { class: `notice notice-${kind}` }, text);
}
