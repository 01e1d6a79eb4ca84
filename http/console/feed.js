// feed.js: the live event feed. It follows GET /v1/stream with the standard
// WebSocket API, which cannot set headers, so the token goes in ?token= (the
// spec's fallback; no other request of the console carries it in a URL). It
// starts with a replay (after_seq) that ends at the tip the node reported,
// checks every event with a ChainChecker, and after any close reconnects with
// after_seq = the last seq it received, so it neither misses nor repeats one.

import { ChainChecker } from "./chain.js";
import { h, time } from "./dom.js";

const MAX_ITEMS = 200;
const MAX_BACKOFF = 30000;

const MARKS = {
  linked: { glyph: "✓", text: "linked to the previous event" },
  first: { glyph: "•", text: "first event shown; its predecessor was not received" },
  broken: { glyph: "✗", text: "chain break" },
};

export class Feed {
  // describe(ev) is the one-line summary of an event; onEvent(ev, result) and
  // onStatus(state, text) tell the rest of the console.
  constructor({ api, list, pauseButton, describe, onEvent, onStatus, onChain }) {
    Object.assign(this, { api, list, pauseButton, describe, onEvent, onStatus, onChain });
    this.queue = Promise.resolve();
    this.shown = new WeakMap(); // row → its event, to describe it again
    this.paused = false;
    this.pending = [];
    this.backoff = 1000;
    pauseButton.addEventListener("click", () => this.setPaused(!this.paused));
  }

  // start follows the stream after afterSeq, replaying up to the tip, seq
  // tipSeq; anchor, when the token may read it, is the tip {seq, id} the node
  // reported, which the replay must reach with that id.
  start({ afterSeq, tipSeq, anchor, nodeDID }) {
    this.checker = new ChainChecker({ afterSeq, anchor, nodeDID });
    this.received = afterSeq;
    this.replayUntil = tipSeq;
    // Announcing the replayed backlog one row at a time would drown a screen
    // reader; the log is busy until the replay reaches the tip.
    this.log = this.list.closest('[role="log"]') ?? this.list;
    this.log.setAttribute("aria-busy", this.replayUntil > afterSeq ? "true" : "false");
    this.onChain(this.checker.summary(), null);
    this.connect();
  }

  connect() {
    this.onStatus("connecting", "connecting");
    const ws = new WebSocket(this.api.streamURL({ after_seq: this.received }));
    this.ws = ws;
    let opened = false;
    ws.addEventListener("open", () => {
      opened = true;
      this.backoff = 1000;
      this.onStatus("live", "live");
    });
    ws.addEventListener("message", (m) => {
      // One event per message, followed by "\n" (docs/streaming.md).
      let ev;
      try {
        ev = JSON.parse(m.data);
      } catch {
        ev = null;
      }
      if (ev && Number.isSafeInteger(ev.seq)) this.received = ev.seq;
      this.queue = this.queue.then(() => this.process(ev)).catch((err) => this.fail(err));
    });
    ws.addEventListener("close", (e) => {
      if (this.ws !== ws) return;
      const why = e.reason ? `${e.code} ${e.reason}` : opened ? `closed (${e.code})` : "could not connect";
      this.onStatus("reconnecting", `reconnecting: ${why}`);
      // A handshake the node refused is hidden from the WebSocket API; a plain
      // request tells a revoked token (the api's 401 handler signs out) from
      // a node that is down.
      if (!opened) this.api.get("events", { limit: 1 }).catch(() => {});
      setTimeout(() => this.connect(), this.backoff);
      this.backoff = Math.min(this.backoff * 2, MAX_BACKOFF);
    });
  }

  async process(ev) {
    const result = await this.checker.check(ev);
    if (ev && typeof ev === "object") {
      this.show(this.item(ev, result));
      if (ev.seq >= this.replayUntil) this.log.setAttribute("aria-busy", "false");
    }
    this.onChain(this.checker.summary(), ev);
    if (ev && typeof ev === "object") this.onEvent(ev, result);
  }

  fail(err) {
    this.onStatus("reconnecting", `error: ${err?.message ?? err}`);
  }

  item(ev, result) {
    const mark = MARKS[result.link];
    const title = result.problems.length ? result.problems.join("; ") : mark.text;
    const li = h("li", { class: "feed-item", dataset: { link: result.link, group: String(ev.type).split(".")[0] } },
      h("span", { class: "feed-mark", title, "aria-hidden": "true" }, mark.glyph),
      h("span", { class: "visually-hidden" }, `${title}: `),
      h("span", { class: "feed-seq" }, `#${ev.seq}`),
      h("span", { class: "feed-type" }, ev.type),
      h("span", { class: "feed-time" }, time(ev.timestamp)),
      h("span", { class: "feed-summary" }, this.describe(ev)),
    );
    this.shown.set(li, ev);
    return li;
  }

  // redescribe writes every row's summary again, once the console knows
  // more (the missions' titles, the identities' names) than when it came.
  redescribe() {
    for (const li of [...this.list.children, ...this.pending]) {
      const ev = this.shown.get(li);
      if (ev) li.querySelector(".feed-summary").textContent = this.describe(ev);
    }
  }

  show(li) {
    if (this.paused) {
      this.pending.push(li);
      if (this.pending.length > MAX_ITEMS) this.pending.shift();
      this.pauseButton.textContent = `Resume (${this.pending.length} new)`;
      return;
    }
    this.list.prepend(li);
    while (this.list.childElementCount > MAX_ITEMS) this.list.lastElementChild.remove();
  }

  setPaused(paused) {
    this.paused = paused;
    this.pauseButton.textContent = paused ? "Resume" : "Pause";
    if (!paused) {
      const items = this.pending.splice(0);
      for (const li of items) this.show(li);
    }
  }
}
