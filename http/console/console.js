// console.js: the supervision console (docs/console.md). A token entered once
// is kept in this tab's session storage and sent as a bearer header on every
// request; only the stream takes it in ?token=. Every panel reads the API and
// says so when the token may not read it, rather than breaking the rest.

import { Api, explain } from "./api.js";
import { Board } from "./board.js";
import { STATES, rateChart, statesChart, creditsChart } from "./charts.js";
import { code, facts, fill, h, notice, num, short, time } from "./dom.js";
import { Feed } from "./feed.js";
import { EventRate, MissionStates, SubnetCredits } from "./stats.js";

const TOKEN_KEY = "civnode.console.token";
const NOTICE_KEY = "civnode.console.notice";
// How many events the feed replays before going live.
const BACKLOG = 30;

const $ = (sel) => document.querySelector(sel);

// ---- signing in and out ----------------------------------------------------

function signOut(message) {
  sessionStorage.removeItem(TOKEN_KEY);
  if (message) sessionStorage.setItem(NOTICE_KEY, message);
  // A reload leaves no state of the old session behind: no socket, no data.
  location.reload();
}

function showLogin() {
  $("#login").hidden = false;
  $("#app").hidden = true;
  const message = sessionStorage.getItem(NOTICE_KEY);
  sessionStorage.removeItem(NOTICE_KEY);
  if (message) fill($("#login-error"), message);
  $("#login-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const input = $("#token");
    const token = input.value.trim();
    const error = $("#login-error");
    if (!token) {
      fill(error, "Enter a token.");
      input.focus();
      return;
    }
    fill(error);
    try {
      // The event log is the one read every kind of token may make.
      await new Api(token).get("events", { limit: 1 });
    } catch (err) {
      fill(error, err.status === 401 ? "The node did not accept this token." : explain(err, "the event log"));
      input.focus();
      return;
    }
    input.value = "";
    sessionStorage.setItem(TOKEN_KEY, token);
    start(token);
  });
}

// ---- the console -----------------------------------------------------------

function start(token) {
  $("#login").hidden = true;
  $("#app").hidden = false;
  $("#topbar-status").hidden = false;
  $("#sign-out").addEventListener("click", () => signOut());
  $("#main").focus();

  const api = new Api(token, () => signOut("The node no longer accepts this token; enter a current one."));
  const titles = new Map(); // mission_id → title, for the feed's lines
  const names = new Map(); // agent_did → display name
  const rate = new EventRate();
  const states = new MissionStates();
  const credits = new SubnetCredits();
  let tipSeq = 0;
  let lastSeq = 0;
  let nodeDID = null;
  let nodeDIDOnly = false; // the token may not read the state: show the DID the events carry

  const board = new Board({
    api, root: $("#board"), form: $("#board-filters"), error: $("#board-error"), titles,
    tip: () => Math.max(tipSeq, lastSeq),
  });

  const charts = {
    rate: { el: $("#chart-rate .chart-body"), draw: (w) => rateChart(w, rate.series()) },
    states: {
      el: $("#chart-states .chart-body"),
      draw: (w) => {
        const [from, to] = states.span();
        const notes = [];
        if (!states.complete) notes.push("Only the first 50,000 mission events were read.");
        if (from > (states.points[0]?.t ?? from)) notes.push("Shown: the last 24 hours.");
        return statesChart(w, from, to, (t) => states.at(t), notes.join(" "));
      },
    },
    credits: {
      el: $("#chart-credits .chart-body"),
      draw: (w) => {
        const out = creditsChart(w, credits.rows());
        if (!credits.complete) out.push(h("p", { class: "help" }, "Only the first 50,000 payments were read."));
        return out;
      },
    },
  };
  const drawn = new Set(); // charts whose data has loaded
  const draw = (name) => {
    if (!drawn.has(name)) return;
    const c = charts[name];
    fill(c.el, c.draw(Math.max(c.el.clientWidth, 240)));
  };
  const drawSoon = throttle((names) => names.forEach(draw), 500);
  // Charts are drawn at their box's width; a new width redraws them (a new
  // height, which drawing itself causes, does not).
  let chartsWidth = 0;
  const redraw = throttle(() => drawn.forEach(draw), 200);
  new ResizeObserver((entries) => {
    const w = Math.round(entries[0].contentRect.width);
    if (w !== chartsWidth) {
      chartsWidth = w;
      redraw([]);
    }
  }).observe($(".charts"));
  // The time axes move on even when nothing happens.
  setInterval(() => drawn.forEach(draw), 30e3);

  const loadChart = async (name, model, what, ...args) => {
    try {
      await model.load(api, ...args);
      drawn.add(name);
      draw(name);
    } catch (err) {
      fill(charts[name].el, notice(explain(err, what), err.status === 403 ? "muted" : "error"));
    }
  };

  const refresh = {
    state: () => nodeDIDOnly || loadNode(api),
    identities: () => loadIdentities(api, names),
    treasuries: () => loadTreasuries(api),
  };
  const refreshSoon = throttle((keys) => keys.forEach((k) => refresh[k]()), 1000);

  const setConn = (state, text) => {
    for (const el of [$("#feed-status"), $("#conn-pill")]) {
      el.dataset.state = state;
      el.textContent = text;
    }
  };

  const feed = new Feed({
    api,
    list: $("#feed-list"),
    pauseButton: $("#feed-pause"),
    describe: (ev) => describe(ev, titles, names),
    onStatus: setConn,
    onChain: (summary, ev) => {
      const el = $("#chain-status");
      // The indicator changes with every event; a screen reader hears only
      // when its state does (intact, broken).
      if (el.dataset.state !== summary.state && summary.state !== "waiting") $("#chain-announce").textContent = summary.text;
      el.dataset.state = summary.state;
      el.textContent = summary.text;
      if (ev && Number.isSafeInteger(ev.seq)) updateTip({ seq: ev.seq, id: ev.id, at: ev.timestamp });
    },
    onEvent: (ev) => {
      lastSeq = Math.max(lastSeq, ev.seq);
      nodeDID ??= ev.node_did;
      if (nodeDIDOnly) showObserverNode(nodeDID);
      if (ev.type === "identity.bootstrapped" || ev.type === "identity.updated") names.set(ev.payload?.agent_did, ev.payload?.display_name);
      const changed = [];
      if (rate.add(ev)) changed.push("rate");
      if (states.add(ev)) changed.push("states");
      if (credits.add(ev)) changed.push("credits");
      if (changed.length) drawSoon(changed);
      if (ev.seq <= tipSeq) return; // the panels were read after it
      if (ev.type.startsWith("mission.")) board.apply(ev);
      // Every panel that an event can change is read again (at most once a
      // second): a panel refreshed only by some types goes stale the first
      // time another type changes what it shows.
      refreshSoon(panelsChangedBy(ev.type));
    },
  });
  (async () => {
    // The tip first: the feed replays up to it and checks that the event at
    // it has the id the node reported; the panels are read after it.
    let anchor = null;
    const state = await loadNode(api);
    if (state?.chain) {
      tipSeq = state.chain.seq;
      anchor = { seq: state.chain.seq, id: state.chain.tip_hash };
      nodeDID = state.identity?.node_did ?? null;
      updateTip({ seq: state.chain.seq, id: state.chain.tip_hash, root: state.chain.root_hash });
    } else {
      // An observer token may not read the state; the event log's total is
      // the tip's seq (seqs start at 1 and have no gaps).
      nodeDIDOnly = true;
      try {
        tipSeq = (await api.get("events", { limit: 1 })).total;
      } catch (err) {
        fill($("#chain-status"), explain(err, "the event log"));
        return;
      }
    }
    feed.start({ afterSeq: Math.max(0, tipSeq - BACKLOG), tipSeq, anchor, nodeDID });
    loadCatalog(api);
    board.load().then(() => feed.redescribe());
    loadIdentities(api, names).then(() => feed.redescribe());
    loadTreasuries(api);
    loadRegistry(api);
    $("#registry-refresh").addEventListener("click", () => loadRegistry(api));
    // One after the other: each reads the log in pages, and the node is
    // better served by a queue than by a burst.
    await loadChart("rate", rate, "the event log", tipSeq);
    await loadChart("states", states, "the mission events");
    await loadChart("credits", credits, "the payments");
  })();
}

// ---- panels ----------------------------------------------------------------

// loadNode reads GET /v1/state into the node panel; it returns the state, or
// null when the token may not read it.
async function loadNode(api) {
  const body = $("#node-body");
  let st;
  try {
    st = await api.get("state");
  } catch (err) {
    fill(body, notice(explain(err, "the node's state"), err.status === 403 ? "muted" : "error"));
    return null;
  }
  const id = st.identity ?? {};
  const pi = id.public_identity ?? {};
  const bal = st.balance ?? {};
  const net = st.network ?? {};
  const brain = st.brain ?? {};
  fill(body,
    h("ul", { class: "tiles", "aria-label": "Node balance" },
      tile("credit", bal.credit), tile("reputation", bal.reputation), tile("capacity", bal.capacity)),
    facts(h("dl", { class: "facts" }), [
      ["Node DID", code(id.node_did, 18, 8)],
      ["Public key", code(id.public_key, 12, 6)],
      ["Key type", pi.key_type ?? "–"],
      ["Network", `${net.status ?? "–"}${Number.isFinite(net.peers) ? `, ${num(net.peers)} peer${net.peers === 1 ? "" : "s"}` : ""}`],
      ["Brain", brain.provider && brain.provider !== "none"
        ? `${brain.provider}${brain.model ? ` · ${brain.model}` : ""} (${brain.reachable ? "reachable" : "unreachable"})` : "none configured"],
      ["Autonomy", st.autonomy?.enabled ? `on${st.autonomy.constraints?.length ? ` (${st.autonomy.constraints.join(", ")})` : ""}` : "off"],
    ]));
  return st;
}

function showObserverNode(did) {
  const body = $("#node-body");
  if (body.querySelector(".observer-did") || !did) return;
  body.append(facts(h("dl", { class: "facts observer-did" }), [["Node DID (from its events)", code(did, 18, 8)]]));
}

function tile(label, value) {
  return h("li", { class: "tile" }, h("span", { class: "tile-value" }, num(value)), h("span", { class: "tile-label" }, label));
}

const tip = { seq: null, id: null, root: null, at: null };

function updateTip(next) {
  Object.assign(tip, Object.fromEntries(Object.entries(next).filter(([, v]) => v !== undefined)));
  facts($("#chain-facts"), [
    ["Tip seq", tip.seq === null ? "–" : `#${tip.seq}`],
    ["Tip hash", code(tip.id, 16, 6)],
    tip.root ? ["Root hash", code(tip.root, 16, 6)] : null,
    tip.at ? ["Last event", time(tip.at, true)] : null,
  ]);
}

async function loadCatalog(api) {
  try {
    const cat = await api.get("game/catalog");
    const role = $("#f-role");
    for (const r of cat.roles ?? []) role.append(h("option", { value: r.id }, r.title ?? r.id));
    const list = h("datalist", { id: "domains" }, (cat.domains ?? []).map((d) => h("option", { value: d.id })));
    document.body.append(list);
    $("#f-domain").setAttribute("list", "domains");
  } catch {
    // Without the catalog (an observer) the role list stays as it is; the
    // board says what the token may read.
    for (const r of ["broker", "operator", "enforcer", "archivist"]) $("#f-role").append(h("option", { value: r }, r));
  }
}

let identityPages = 1;

// loadIdentities reads the identities with their stats: the supervision list
// (with profiles) for the owner, the civilization list for an agent token. A
// refresh reads as many pages as are shown; more reads one more.
async function loadIdentities(api, names, more = false) {
  const body = $("#identities-body");
  const pages = more ? identityPages + 1 : identityPages;
  let rows = [];
  let cursor = null;
  let source = "supervision/identities";
  try {
    try {
      ({ rows, cursor } = await readIdentities(api, source, pages));
    } catch (err) {
      if (err.status !== 403) throw err;
      source = "civilization/identities";
      ({ rows, cursor } = await readIdentities(api, source, pages));
    }
  } catch (err) {
    fill(body, notice(explain(err, "the identities"), err.status === 403 ? "muted" : "error"));
    return;
  }
  identityPages = pages;
  for (const r of rows) names.set(r.agent_did, r.display_name);
  const moreButton = cursor
    ? h("button", { type: "button", class: "button button-quiet", on: { click: () => loadIdentities(api, names, true) } }, "Show more")
    : null;
  fill(body,
    rows.length === 0 ? notice("No identities yet.") : h("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": "Identities (scrolls sideways)" },
      h("table", { class: "data" },
        h("thead", null, h("tr", null,
          h("th", { scope: "col" }, "Identity"), h("th", { scope: "col" }, "Faction, role"), h("th", { scope: "col" }, "Controller"),
          h("th", { scope: "col", class: "num" }, "Credit"), h("th", { scope: "col", class: "num" }, "Reputation"),
          h("th", { scope: "col", class: "num" }, "Capacity"), h("th", { scope: "col", class: "num" }, "Missions done"))),
        h("tbody", null, rows.map((r) => {
          const st = r.stats ?? {};
          const b = r.controller_binding;
          const prof = r.profile;
          return h("tr", null,
            h("th", { scope: "row" }, h("span", { class: "who" }, r.display_name), h("span", { class: "muted who-id" }, r.public_id)),
            h("td", null, prof ? [prof.faction, prof.role].filter(Boolean).join(", ") || "–" : "–"),
            h("td", null, b ? h("span", { class: ["badge", b.active ? "badge-ok" : "badge-off"] }, b.active ? "bound" : "inactive") : h("span", { class: "badge badge-off" }, "none"),
              b ? h("span", { class: "muted who-id" }, b.controller_kind) : null),
            h("td", { class: "num" }, num(st.credit)), h("td", { class: "num" }, num(st.reputation)),
            h("td", { class: "num" }, num(st.capacity)), h("td", { class: "num" }, num(st.missions_completed)));
        })))),
    source === "civilization/identities" ? h("p", { class: "help" }, "Profiles are shown to the owner token only.") : null,
    moreButton);
}

async function readIdentities(api, path, pages) {
  const rows = [];
  let cursor = null;
  for (let i = 0; i < pages; i++) {
    const page = await api.get(path, { limit: 100, cursor });
    rows.push(...page.identities);
    cursor = page.next_cursor;
    if (!cursor) break;
  }
  return { rows, cursor };
}

async function loadTreasuries(api) {
  const body = $("#treasuries-body");
  let m;
  try {
    m = await api.get("civilization/metrics");
  } catch (err) {
    fill(body, notice(explain(err, "the treasuries"), err.status === 403 ? "muted" : "error"));
    return;
  }
  const missions = m.missions;
  if (!missions) {
    fill(body, notice("This node does not serve missions, so it keeps no treasuries."));
    return;
  }
  const rows = Object.entries(missions.treasuries ?? {}).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  const paid = missions.paid ?? {};
  fill(body,
    rows.length === 0 ? notice("No treasury has received a share yet.")
      : h("table", { class: "data" },
        h("caption", { class: "visually-hidden" }, "Treasury balance per subnet"),
        h("thead", null, h("tr", null, h("th", { scope: "col" }, "Subnet"), h("th", { scope: "col", class: "num" }, "Treasury (credits)"))),
        h("tbody", null, rows.map(([subnet, credit]) => h("tr", null, h("th", { scope: "row" }, subnet), h("td", { class: "num" }, num(credit)))))),
    h("p", { class: "help" },
      `${num(paid.settlements)} settlement${paid.settlements === 1 ? "" : "s"} paid ${num(paid.agent_credit)} credits to agents and `,
      `${num(paid.treasury_share_credit)} to treasuries. Missions: `,
      STATES.map((st) => `${num(missions.by_state?.[st])} ${st}`).join(", "), "."));
}

async function loadRegistry(api) {
  const body = $("#registry-body");
  fill(body, h("p", { class: "muted" }, "Asking the registry…"));
  let agents;
  try {
    ({ agents } = await api.get("core/servicenet/agents"));
  } catch (err) {
    // A node run without a registry (--registry-url "") is not failing: it
    // says so, and the panel shows it as information.
    if (err.code === "registry_not_configured") {
      fill(body, notice("Not configured: this node runs without an agent registry.", "muted"));
      return;
    }
    fill(body, notice(explain(err, "the registry's agents"), err.status === 502 || err.status === 504 ? "warn" : err.status === 403 || err.status === 404 ? "muted" : "error"));
    return;
  }
  if (!agents?.length) {
    fill(body, notice("The registry lists no agents."));
    return;
  }
  fill(body, h("ul", { class: "agents" }, agents.map((a) => h("li", { class: "agent" },
    h("p", { class: "agent-name" }, a.name ?? a.agent_id, " ", h("code", { class: "ident" }, a.agent_id)),
    a.description ? h("p", { class: "agent-desc" }, a.description) : null,
    h("p", { class: "agent-tags" },
      a.requires_payment ? h("span", { class: "badge badge-warn" }, "paid (x402)") : h("span", { class: "badge badge-ok" }, "free"),
      a.requires_oauth ? h("span", { class: "badge badge-off" }, "OAuth") : null)))));
}

// panelsChangedBy names the panels whose reads an event of type can change.
// Missions change the treasuries panel's counts; settlements and oracle
// payments change balances (the node's, the identities', the treasuries');
// identity events change the identities panel. An unknown type refreshes
// them all rather than leave one stale.
function panelsChangedBy(type) {
  if (/^(identity|profile|controller_binding)\./.test(type)) return ["identities"];
  if (/^(mission|game)\./.test(type)) return ["state", "identities", "treasuries"];
  if (type === "payment.settled" || type === "oracle.settled") return ["state", "identities", "treasuries"];
  if (/^(node|peer|servicenet|payment|oracle)\./.test(type)) return ["state"];
  return ["state", "identities", "treasuries"];
}

// describe is the feed's one-line summary of an event.
function describe(ev, titles, names) {
  const p = ev.payload ?? {};
  const mission = (id) => titles.get(id) ?? `mission ${short(id, 8, 4)}`;
  const who = (did) => names.get(did) ?? short(did, 14, 4);
  switch (ev.type) {
    case "node.genesis":
      return "the chain begins";
    case "mission.created":
      return `${p.title} — published by ${p.publisher} in ${p.subnet_id}, ${num(p.reward?.agent_credit)} cr`;
    case "mission.accepted":
      return `${mission(p.mission_id)} — claimed by ${p.claimer}`;
    case "mission.completed":
      return `${mission(p.mission_id)} — completed by ${p.claimer}`;
    case "mission.settled":
      return `${mission(p.mission_id)} — settled`;
    case "payment.settled":
      return p.mission_id
        ? `${num(p.agent_credit)} cr to ${p.to}, ${num(p.treasury_share_credit)} to the ${p.treasury} treasury`
        : `x402 payment${p.agent_id ? ` for ${p.agent_id}` : ""}`;
    case "identity.bootstrapped":
      return `${p.display_name} (${p.public_id}) joined`;
    case "identity.updated":
      return `${p.display_name} (${p.public_id}) updated`;
    case "profile.updated":
      return `${who(p.agent_did)}: ${[p.faction, p.role, p.strategy].filter(Boolean).join(", ") || "profile cleared"}`;
    case "controller_binding.updated":
      return `${who(p.agent_did)}: ${p.controller_kind} ${p.controller_ref}${p.active ? "" : " (inactive)"}`;
    case "game.starter_missions.installed":
      return `starter set installed: ${num(p.mission_ids?.length)} missions`;
    case "game.mission_pack.installed":
      return `mission pack ${p.pack_id} installed: ${num(p.mission_ids?.length)} missions`;
    case "peer.connected":
      return `${p.kind ?? "peer"} link to ${p.remote ?? "?"} came up`;
    case "peer.disconnected":
      return `${p.kind ?? "peer"} link to ${p.remote ?? "?"} went down`;
    case "oracle.feed.published":
      return `${p.publisher ?? who(p.publisher_did)} published version ${num(p.version)} of feed ${p.feed}, `
        + (p.price ? `${num(p.price)} cr a pull` : "free to pull");
    case "oracle.subscribed":
      return `${p.subscriber ?? who(p.subscriber_did)} subscribed to feed ${p.feed}, paying at most ${num(p.max_price)} cr a version`;
    case "oracle.settled":
      return `${p.subscriber ?? who(p.subscriber_did)} paid ${p.publisher ?? who(p.publisher_did)} ${num(p.price)} cr `
        + `for version ${num(p.version)} of feed ${p.feed}`;
    case "payment.authorized":
      return `x402 payment of ${p.amount} authorized for agent ${p.agent_id} from account ${p.account_ref}`;
    case "servicenet.invoked":
      return `agent ${p.agent_id} invoked: ${p.status === "accepted" ? `task ${p.task_id} accepted` : "answered"}`;
    case "servicenet.task.completed":
      return `agent ${p.agent_id}: task ${p.task_id} completed`;
    case "servicenet.task.failed":
      return `agent ${p.agent_id}: task ${p.task_id} failed`;
    default:
      if (ev.type?.startsWith("servicenet.")) return `agent ${p.agent_id ?? "?"}${p.task_id ? `, task ${p.task_id}` : ""}`;
      return Object.keys(p).slice(0, 5).join(", ");
  }
}

// ---- helpers ---------------------------------------------------------------

// throttle runs fn at most once per ms, with every argument list it was
// called with merged (arrays are concatenated).
function throttle(fn, ms) {
  let timer = null;
  let pending = [];
  return (arg) => {
    if (Array.isArray(arg)) pending.push(...arg);
    if (timer) return;
    timer = setTimeout(() => {
      timer = null;
      const args = [...new Set(pending)];
      pending = [];
      fn(args);
    }, ms);
  };
}

// ---- start -----------------------------------------------------------------

const saved = sessionStorage.getItem(TOKEN_KEY);
if (saved) start(saved);
else showLogin();
