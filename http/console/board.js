// board.js: the missions board, one column per state, read from
// GET /v1/core/missions with its filters and cursors, and moved live by the
// mission events of the feed. A card is moved only by an event newer than
// the record it shows (its updated_at), so the replay at the feed's start
// never moves a mission back.

import { explain } from "./api.js";
import { h, fill, num, notice } from "./dom.js";
import { STATES } from "./charts.js";

const PAGE = 50;
const EVENT_STATE = { "mission.accepted": "claimed", "mission.completed": "completed", "mission.settled": "settled" };
const TITLES = { created: "Created", claimed: "Claimed", completed: "Completed", settled: "Settled" };

export class Board {
  // tip() is the seq of the last event the feed has processed: the board's
  // pages show everything up to it, so only later events move cards.
  constructor({ api, root, form, error, titles, tip }) {
    Object.assign(this, { api, root, form, error, titles, tip });
    this.through = 0;
    this.filters = {};
    this.columns = new Map();
    this.cards = new Map(); // mission_id → {li, rec}
    this.generation = 0;
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      this.load();
    });
    form.addEventListener("reset", () => setTimeout(() => this.load(), 0));
    form.querySelector("#f-state").addEventListener("change", () => this.load());
    form.querySelector("#f-role").addEventListener("change", () => this.load());
  }

  readFilters() {
    const f = new FormData(this.form);
    const get = (k) => String(f.get(k) ?? "").trim();
    return { state: get("state"), subnet_id: get("subnet_id"), domain: get("domain"), required_role: get("required_role") };
  }

  matches(rec) {
    const f = this.filters;
    return (!f.subnet_id || rec.subnet_id === f.subnet_id) && (!f.domain || rec.domain === f.domain)
      && (!f.required_role || rec.required_role === f.required_role);
  }

  async load() {
    const generation = ++this.generation;
    this.filters = this.readFilters();
    this.through = this.tip();
    this.cards.clear();
    this.columns.clear();
    fill(this.error);
    const states = this.filters.state ? [this.filters.state] : STATES;
    fill(this.root, states.map((st) => this.column(st)));
    this.root.dataset.columns = String(states.length);
    try {
      await Promise.all(states.map((st) => this.more(st, generation)));
    } catch (err) {
      if (generation !== this.generation) return;
      if (err.status === 400 && err.field) {
        fill(this.error, `The filter ${err.field} was refused: ${err.message}.`);
        fill(this.root);
      } else {
        fill(this.root, notice(explain(err, "the missions"), err.status === 403 ? "muted" : "error"));
      }
    }
  }

  column(state) {
    const id = `col-${state}`;
    const count = h("span", { class: "count" });
    const list = h("ol", { class: "cards", tabindex: "0", "aria-labelledby": id });
    const moreButton = h("button", { type: "button", class: "button button-quiet", hidden: true }, "Show more");
    const col = { state, count, list, moreButton, cursor: null, more: false };
    moreButton.addEventListener("click", () => this.more(state, this.generation).catch((err) => {
      fill(this.error, explain(err, "more missions"));
    }));
    this.columns.set(state, col);
    this.recount(col);
    return h("section", { class: "column", dataset: { state } },
      h("h3", { id }, h("span", { class: `state-dot c-${state}`, "aria-hidden": "true" }), TITLES[state], " ", count),
      list, moreButton);
  }

  async more(state, generation) {
    const col = this.columns.get(state);
    const page = await this.api.get("core/missions", {
      state, subnet_id: this.filters.subnet_id, domain: this.filters.domain,
      required_role: this.filters.required_role, limit: PAGE, cursor: col.cursor,
    });
    if (generation !== this.generation) return;
    for (const rec of page.missions) {
      if (this.cards.has(rec.mission_id)) continue; // shown already, moved here live
      this.place(rec, false);
    }
    col.cursor = page.next_cursor;
    col.more = Boolean(page.next_cursor);
    col.moreButton.hidden = !col.more;
    this.recount(col);
  }

  recount(col) {
    const n = col.list.childElementCount;
    fill(col.count, h("span", { "aria-hidden": "true" }, `${num(n)}${col.more ? "+" : ""}`),
      h("span", { class: "visually-hidden" }, `: ${num(n)} missions${col.more ? " shown, more to load" : ""}`));
  }

  // place shows rec in its state's column: at the end when it comes from a
  // page, at the top, marked, when the feed brought it.
  place(rec, live) {
    this.titles.set(rec.mission_id, rec.title);
    const old = this.cards.get(rec.mission_id);
    if (old) {
      old.li.remove();
      const from = this.columns.get(old.rec.state);
      if (from) this.recount(from);
    }
    const col = this.columns.get(rec.state);
    if (!col) {
      this.cards.delete(rec.mission_id);
      return;
    }
    const li = this.card(rec, live);
    if (live) col.list.prepend(li);
    else col.list.append(li);
    this.cards.set(rec.mission_id, { li, rec });
    this.recount(col);
  }

  card(rec, live) {
    const r = rec.reward ?? {};
    const needs = [rec.required_role, rec.required_faction].filter(Boolean).join(", ");
    return h("li", { class: ["card", live && "card-live"], dataset: { missionId: rec.mission_id, state: rec.state } },
      h("h4", { class: "card-title" }, rec.title),
      live ? h("p", { class: "card-badge" }, rec.state === "created" ? "new" : `now ${rec.state}`) : null,
      h("dl", { class: "card-facts" },
        h("dt", null, "Reward"), h("dd", null, `${num(r.agent_credit)} cr`, r.treasury_share_credit ? ` + ${num(r.treasury_share_credit)} to treasury` : "",
          r.reputation ? `, ${num(r.reputation)} rep` : ""),
        h("dt", null, "Where"), h("dd", null, rec.subnet_id, rec.zone_id ? ` / ${rec.zone_id}` : "", ` · ${rec.domain}`),
        h("dt", null, "Publisher"), h("dd", null, rec.publisher),
        needs ? [h("dt", null, "Needs"), h("dd", null, needs)] : null,
        rec.claimer ? [h("dt", null, "Claimer"), h("dd", null, rec.claimer)] : null,
      ));
  }

  // apply moves the board with a mission event from the feed.
  async apply(ev) {
    const p = ev.payload ?? {};
    const id = p.mission_id;
    if (typeof id !== "string") return;
    if (ev.type === "mission.created" && typeof p.title === "string") this.titles.set(id, p.title);
    if (ev.seq <= this.through) return;
    if (ev.type === "mission.created") {
      if (this.cards.has(id)) return;
      const rec = {
        mission_id: id, title: p.title, state: "created", publisher: p.publisher, publisher_kind: p.publisher_kind,
        domain: p.domain, subnet_id: p.subnet_id, zone_id: p.zone_id ?? null, required_role: p.required_role ?? null,
        required_faction: p.required_faction ?? null, reward: p.reward, claimer: null, updated_at: ev.timestamp,
      };
      if (this.matches(rec)) this.place(rec, true);
      return;
    }
    const state = EVENT_STATE[ev.type];
    if (!state) return;
    const shown = this.cards.get(id);
    if (shown) {
      if (!(ev.timestamp > shown.rec.updated_at)) return; // the record is newer already
      const rec = { ...shown.rec, state, updated_at: ev.timestamp, claimer: p.claimer ?? shown.rec.claimer };
      this.place(rec, true);
      return;
    }
    // Not on the board (filtered out, or on a page not loaded): the record
    // says whether it belongs.
    const generation = this.generation;
    try {
      const rec = await this.api.get(`core/missions/${encodeURIComponent(id)}`);
      if (generation === this.generation && !this.cards.has(id) && this.matches(rec)) this.place(rec, true);
    } catch {
      // The board stays as it was; the next load shows the mission.
    }
  }
}
