// e2e.mjs: the supervision console in a real browser. Debian's chromium,
// driven by playwright-core, against a running node that
// http/console_browser_test.go (TestConsoleInBrowser) populated. It signs in,
// waits for the live feed, publishes a mission over the API and waits for it
// in the feed and on the board, claims it and waits for the card to move,
// settles another, checks that the treasuries panel, the board and the
// charts count what the node counts, that oracle events read as words,
// checks the chain indicator, takes full-page screenshots at a laptop's and a
// phone's size, looks at the console with an observer token, and at a node
// without a registry, whose registry panel says "Not configured". Anything the
// page reports (a console error or warning, an uncaught error, a CSP
// violation, a request the node refused) fails it. Progress goes to stderr; a
// JSON summary to stdout.
import { chromium } from "playwright-core";

function env(name) {
  const v = process.env[name];
  if (!v) {
    console.error(`set ${name}`);
    process.exit(2);
  }
  return v;
}

const base = env("CIVNODE_URL");
const token = env("CIVNODE_TOKEN");
const observerToken = env("CIVNODE_OBSERVER_TOKEN");
// A second node, run without an agent registry (--registry-url ""), with the
// same owner token.
const noRegistryBase = env("CIVNODE_NO_REGISTRY_URL");
const claimer = env("CIVNODE_CLAIMER");
const desktopShot = env("CIVNODE_SCREENSHOT");
const phoneShot = env("CIVNODE_SCREENSHOT_PHONE");
const executablePath = process.env.CIVNODE_CHROMIUM ?? "/usr/bin/chromium";
const WAIT = 30_000;

const started = Date.now();
const log = (msg) => console.error(`${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s ${msg}`);
const fail = (msg) => {
  throw new Error(msg);
};

// api calls the node as a client other than the page would.
async function api(method, path, body) {
  const res = await fetch(base + path, {
    method,
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) fail(`${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text);
}

// watch records everything a page reports that a working console never does.
// allow lists what a given page may legitimately see (an observer's 403s).
// expect says what the test is provoking at the moment: a reload (which
// aborts what the page had under way) or a filter the node refuses (400).
function watch(page, problems, allow = () => false, expect = {}) {
  page.on("console", (m) => {
    if (expect.badFilter && /status of 400/.test(m.text())) return;
    if ((m.type() === "error" || m.type() === "warning") && !allow(m.text())) problems.push(`console ${m.type()}: ${m.text()}`);
  });
  page.on("pageerror", (e) => problems.push(`uncaught: ${e.message}`));
  page.on("response", (r) => {
    if (expect.badFilter && r.status() === 400 && r.url().includes("domain=Not")) {
      expect.refused = (expect.refused ?? 0) + 1;
      return;
    }
    if (r.status() >= 400 && !allow(`${r.status()} ${r.url()}`)) problems.push(`HTTP ${r.status()} for ${r.url()}`);
  });
  page.on("requestfailed", (r) => {
    if (!expect.reloading) problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`);
  });
}

// Every page records CSP violations itself: no script of the console's can
// hide one, and the init script runs before any of them.
function recordViolations() {
  window.__violations = [];
  document.addEventListener("securitypolicyviolation", (e) => {
    window.__violations.push(`${e.violatedDirective} blocked ${e.blockedURI || "inline"} at ${e.sourceFile}:${e.lineNumber}`);
  });
}

async function signIn(page, secret, at = base) {
  await page.goto(`${at}/v1/console/`);
  await page.getByLabel("Token", { exact: true }).fill(secret);
  await page.getByRole("button", { name: "Open the console" }).click();
  await page.locator("#app").waitFor({ state: "visible", timeout: WAIT });
  await page.locator('#feed-status[data-state="live"]').waitFor({ timeout: WAIT });
  // The replay ends at the tip the node reported: the indicator has checked it.
  await page.locator('#chain-status[data-state="ok"]').waitFor({ timeout: WAIT });
}

async function chainText(page) {
  const el = page.locator("#chain-status");
  const state = await el.getAttribute("data-state");
  const text = (await el.textContent()).trim();
  if (state !== "ok") fail(`chain indicator ${state}: ${text}`);
  const broken = await page.locator('#feed-list li[data-link="broken"]').count();
  if (broken) fail(`${broken} feed rows are marked broken`);
  return text;
}

async function noOverflow(page) {
  return page.evaluate(() => {
    const inner = window.innerWidth;
    const wide = [...document.querySelectorAll("body *")]
      .filter((el) => el.getBoundingClientRect().right > inner + 0.5 && !el.closest(".table-wrap"))
      .slice(0, 5)
      .map((el) => `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ""}.${el.className} ends at ${el.getBoundingClientRect().right}`);
    return { scroll_width: document.documentElement.scrollWidth, inner_width: inner, wide };
  });
}

const browser = await chromium.launch({
  executablePath,
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});
const summary = {};
let page;
try {
  const context = await browser.newContext({
    viewport: { width: 1280, height: 900 }, colorScheme: "light", reducedMotion: "reduce",
    locale: "en-GB", timezoneId: "UTC",
  });
  await context.addInitScript(recordViolations);
  page = await context.newPage();
  const problems = [];
  const nav = {}; // what the test provokes; see watch
  watch(page, problems, undefined, nav);

  // The watch itself must see a violation, or its silence proves nothing.
  await page.goto(`${base}/v1/console/`);
  await page.evaluate(() => document.body.setAttribute("style", "outline: 1px solid red"));
  await page.waitForFunction(() => window.__violations.some((v) => v.startsWith("style-src")), null, { timeout: WAIT });
  await page.evaluate(() => {
    document.body.removeAttribute("style");
    window.__violations.length = 0;
  });
  problems.length = 0;
  log("a deliberate CSP violation was seen; the page's own are watched from here");

  await signIn(page, token);
  log("signed in; the feed is live and the replay checked");
  if (page.url().includes(token)) fail("the token is in the page's address");
  const stored = await page.evaluate(() => ({ session: sessionStorage.length, local: localStorage.length }));
  if (stored.session !== 1 || stored.local !== 0) fail(`storage: ${JSON.stringify(stored)}`);

  // Everything loaded: the board, the charts, the registry.
  await page.locator("#board .card").nth(12).waitFor({ timeout: WAIT });
  for (const chart of ["#chart-rate", "#chart-states", "#chart-credits"]) {
    await page.locator(`${chart} svg`).waitFor({ timeout: WAIT });
  }
  await page.locator("#registry-body .agent").nth(2).waitFor({ timeout: WAIT });
  await page.locator("#identities-body tbody tr").nth(5).waitFor({ timeout: WAIT });
  await page.locator("#treasuries-body tbody tr").nth(2).waitFor({ timeout: WAIT });
  // Rows the feed showed before the board named their missions say them now.
  await page.waitForFunction(() => [...document.querySelectorAll("#feed-list .feed-summary")]
    .every((el) => !/^mission [0-9a-f]{8}…/.test(el.textContent)), null, { timeout: WAIT })
    .catch(() => fail("feed rows still name missions by id once the board has loaded"));
  log("every panel has loaded");

  // A settlement moves balances and counts; the mission events after it
  // (published, claimed) move counts alone, and the panels read from the API
  // must take those from the feed too, not only settlements.
  const completed = (await api("GET", "/v1/core/missions?state=completed")).missions;
  if (completed.length === 0) fail("no completed mission to settle");
  await api("POST", `/v1/core/missions/${completed[0].mission_id}/settle`, {});
  await page.locator("#feed-list li", { hasText: `${completed[0].title} — settled` }).waitFor({ timeout: WAIT });
  const afterSettle = (await api("GET", "/v1/civilization/metrics")).missions.paid.settlements;
  await page.waitForFunction((n) => document.querySelector("#treasuries-body .help")?.textContent.startsWith(`${n} settlements paid`),
    afterSettle, { timeout: WAIT }).catch(() => fail("the treasuries panel did not take the settlement"));
  log(`settled ${completed[0].mission_id} over the API; the treasuries panel took it`);

  // A mission published over the API appears without a reload.
  const title = "Survey the outer reef";
  const mission = await api("POST", "/v1/core/missions", {
    title, description: "Map the outer reef of the genesis subnet and file the soundings.",
    publisher: "genesis", publisher_kind: "planetary_government", domain: "research", subnet_id: "genesis",
    zone_id: "outer-reef", required_role: "archivist",
    reward: { agent_credit: 30, reputation: 4, capacity: 0, treasury_share_credit: 6 },
  });
  log(`published ${mission.mission_id} over the API`);
  await page.locator("#feed-list li", { hasText: title }).first().waitFor({ timeout: WAIT });
  const card = (state) => page.locator(`#board .column[data-state="${state}"] .card`, { hasText: title });
  await card("created").waitFor({ timeout: WAIT });
  log("it is in the live feed and on the board");

  await api("POST", `/v1/core/missions/${mission.mission_id}/claim`, { claimer });
  await card("claimed").waitFor({ timeout: WAIT });
  await card("created").waitFor({ state: "detached", timeout: WAIT });
  await page.locator("#feed-list li", { hasText: `${title} — claimed by ${claimer}` }).waitFor({ timeout: WAIT });
  log("claimed over the API: the card moved to Claimed");

  // The charts and the indicator have taken the new events, and say what
  // the node's own views say.
  const tipSeq = (await api("GET", "/v1/state")).chain.seq;
  const { missions } = await api("GET", "/v1/civilization/metrics");
  const s = missions.by_state;
  const paid = missions.paid.agent_credit + missions.paid.treasury_share_credit;
  const subnets = Object.keys(missions.treasuries).length;
  const expect = {
    "#chain-status": `through seq ${tipSeq};`,
    "#chart-rate .chart-summary": `${tipSeq} events in the last hour`,
    "#chart-states .chart-summary": `Now: ${s.created} created, ${s.claimed} claimed, ${s.completed} completed, ${s.settled} settled.`,
    "#chart-credits .chart-summary": `${paid} credits paid by settlements across ${subnets} subnets`,
  };
  for (const [sel, text] of Object.entries(expect)) {
    await page.waitForFunction(([sel, text]) => document.querySelector(sel)?.textContent.includes(text), [sel, text], { timeout: WAIT })
      .catch(async () => fail(`${sel} says ${JSON.stringify(await page.locator(sel).textContent())}, want ${JSON.stringify(text)}`));
  }
  log("the charts agree with the node's metrics and tip");

  // The treasuries panel, the board and the chart count the same missions
  // after the live events, as the node's metrics do; the treasuries panel
  // also says what the settlements paid.
  const counts = `Missions: ${s.created} created, ${s.claimed} claimed, ${s.completed} completed, ${s.settled} settled.`;
  const payments = `${missions.paid.settlements} settlements paid ${missions.paid.agent_credit} credits to agents and `
    + `${missions.paid.treasury_share_credit} to treasuries.`;
  for (const text of [counts, payments]) {
    await page.waitForFunction((text) => document.querySelector("#treasuries-body .help")?.textContent.includes(text), text, { timeout: WAIT })
      .catch(async () => fail(`the treasuries panel says ${JSON.stringify(await page.locator("#treasuries-body .help").textContent())}, want ${JSON.stringify(text)}`));
  }
  await page.waitForFunction((s) => ["created", "claimed", "completed", "settled"]
    .every((st) => document.querySelectorAll(`#board .column[data-state="${st}"] .card`).length === s[st]), s, { timeout: WAIT })
    .catch(async () => fail(`the board's columns hold ${JSON.stringify(await page.evaluate(() => Object.fromEntries(
      [...document.querySelectorAll("#board .column")].map((c) => [c.dataset.state, c.querySelectorAll(".card").length]))))}, `
      + `the node counts ${JSON.stringify(s)}`));
  summary.treasuries = (await page.locator("#treasuries-body .help").textContent()).trim();
  log(`the treasuries panel and the board agree: ${summary.treasuries}`);

  // Oracle events are said in words, not as their payload's keys.
  for (const text of ["grace published version 1 of feed prices.eth-usd, 5 cr a pull",
    "ada subscribed to feed prices.eth-usd, paying at most 10 cr a version",
    "ada paid grace 5 cr for version 1 of feed prices.eth-usd"]) {
    await page.locator("#feed-list li", { hasText: text }).first().waitFor({ timeout: WAIT })
      .catch(() => fail(`no feed row says ${JSON.stringify(text)}`));
  }
  summary.oracle_rows = await page.locator("#feed-list li", { hasText: "feed prices.eth-usd" }).count();
  log("the feed says the oracle's events in words");
  summary.chain = await chainText(page);
  summary.feed_items = await page.locator("#feed-list li").count();
  summary.cards = await page.locator("#board .card").count();
  summary.mission_id = mission.mission_id;
  summary.title = title;
  log(`chain indicator: ${summary.chain}`);

  // Let the charts settle at this width before the picture.
  await page.waitForTimeout(700);
  await page.screenshot({ path: desktopShot, fullPage: true, animations: "disabled" });
  log(`desktop screenshot: ${desktopShot}`);

  // A phone: nothing overflows sideways, and the charts redraw to fit.
  await page.setViewportSize({ width: 375, height: 812 });
  await page.waitForFunction(() => [...document.querySelectorAll(".chart-svg")].every((svg) => svg.getBoundingClientRect().width <= 375));
  await page.waitForTimeout(500);
  const phone = await noOverflow(page);
  summary.phone = phone;
  if (phone.scroll_width > phone.inner_width) fail(`the page overflows at 375 px: ${JSON.stringify(phone)}`);
  await page.screenshot({ path: phoneShot, fullPage: true, animations: "disabled" });
  log(`phone screenshot: ${phoneShot}`);

  // The board's filters, from the keyboard: a state shows its column alone,
  // a subnet only its missions, a value no mission could have is refused
  // with the node's reason, and Clear brings every column back.
  await page.setViewportSize({ width: 1280, height: 900 });
  if ((await page.locator("#f-role option").count()) < 5) fail("the role filter lacks the catalog's roles");
  await page.locator("#f-state").selectOption("settled");
  await page.locator('#board[data-columns="1"] .column[data-state="settled"] .card').nth(s.settled - 1).waitFor({ timeout: WAIT });
  await page.locator("#f-state").selectOption("");
  await page.locator("#f-subnet").fill("eastport");
  await page.locator("#f-subnet").press("Enter");
  await page.locator('#board[data-columns="4"]').waitFor({ timeout: WAIT });
  await page.waitForFunction(() => {
    const cards = [...document.querySelectorAll("#board .card")];
    return cards.length > 0 && cards.every((c) => c.textContent.includes("eastport"));
  }, null, { timeout: WAIT }).catch(() => fail("the subnet filter shows missions of other subnets"));
  nav.badFilter = true;
  await page.locator("#f-domain").fill("Not A Domain!");
  await page.locator("#f-domain").press("Enter");
  await page.locator("#board-error", { hasText: "The filter domain was refused" }).waitFor({ timeout: WAIT });
  await page.getByRole("button", { name: "Clear" }).click();
  await page.locator("#board .card").nth(summary.cards - 1).waitFor({ timeout: WAIT });
  if (await page.locator("#board-error").isVisible()) fail("the filter error stayed after Clear");
  await page.waitForTimeout(300); // the browser's own report of the 400s
  nav.badFilter = false;
  if (!nav.refused) fail("the refused filter never reached the node");
  log("the board's filters work from the keyboard; a bad one is explained");

  // A reload keeps the session: the token was entered once. The reload
  // starts a fresh record of violations; the old one is kept first.
  const collect = async () => problems.push(...(await page.evaluate(() => window.__violations)).map((v) => `CSP: ${v}`));
  await collect();
  nav.reloading = true;
  await page.reload();
  nav.reloading = false;
  await page.locator('#feed-status[data-state="live"]').waitFor({ timeout: WAIT });
  await page.locator('#chain-status[data-state="ok"]').waitFor({ timeout: WAIT });
  if (await page.locator("#login").isVisible()) fail("a reload asked for the token again");
  log("a reload kept the session");

  await collect();
  if (problems.length) fail(`the page reported:\n  ${problems.join("\n  ")}`);
  await context.close();

  // An observer token reads the log and the stream only: the other panels
  // say so, and nothing else goes wrong.
  const observer = await browser.newContext({ viewport: { width: 1280, height: 900 }, reducedMotion: "reduce" });
  await observer.addInitScript(recordViolations);
  page = await observer.newPage();
  const refusedHTTP = /^(Failed to load resource: the server responded with a status of 403|403 )/;
  const obsProblems = [];
  watch(page, obsProblems, (text) => refusedHTTP.test(text));
  await signIn(page, observerToken);
  const refusals = {
    node: "#node-body", missions: "#board", identities: "#identities-body",
    treasuries: "#treasuries-body", registry: "#registry-body",
  };
  summary.observer = { refused: [] };
  for (const [name, sel] of Object.entries(refusals)) {
    await page.locator(`${sel} .notice`, { hasText: "This token may not read" }).waitFor({ timeout: WAIT });
    summary.observer.refused.push(name);
  }
  await page.locator("#chart-rate svg").waitFor({ timeout: WAIT });
  await page.locator("#chart-states svg").waitFor({ timeout: WAIT });
  await page.locator("#node-body .observer-did").waitFor({ timeout: WAIT });
  summary.observer.chain = await chainText(page);
  const obsViolations = await page.evaluate(() => window.__violations);
  obsProblems.push(...obsViolations.map((v) => `CSP: ${v}`));
  if (obsProblems.length) fail(`with an observer token the page reported:\n  ${obsProblems.join("\n  ")}`);
  log("an observer sees the log, the stream and the charts, and is told what it may not read");
  await observer.close();

  // A node without a registry: the registry panel says so as information,
  // and the node's 503 registry_not_configured is the one refusal expected.
  const bare = await browser.newContext({ viewport: { width: 1280, height: 900 }, reducedMotion: "reduce" });
  await bare.addInitScript(recordViolations);
  page = await bare.newPage();
  const notConfigured = /^(Failed to load resource: the server responded with a status of 503|503 .*\/v1\/core\/servicenet\/agents)/;
  const bareProblems = [];
  watch(page, bareProblems, (text) => notConfigured.test(text));
  await signIn(page, token, noRegistryBase);
  const registryNotice = page.locator("#registry-body .notice.notice-muted", { hasText: "Not configured" });
  await registryNotice.waitFor({ timeout: WAIT });
  summary.no_registry = (await registryNotice.textContent()).trim();
  bareProblems.push(...(await page.evaluate(() => window.__violations)).map((v) => `CSP: ${v}`));
  if (bareProblems.length) fail(`on the node without a registry the page reported:\n  ${bareProblems.join("\n  ")}`);
  log(`without a registry the panel says: ${summary.no_registry}`);
  await bare.close();
} catch (err) {
  if (page && !page.isClosed()) {
    const at = `${desktopShot}.failure.png`;
    await page.screenshot({ path: at, fullPage: true }).catch(() => {});
    const status = await page.evaluate(() => ({
      feed: document.querySelector("#feed-status")?.textContent,
      chain: document.querySelector("#chain-status")?.textContent,
      login: document.querySelector("#login-error")?.textContent,
    })).catch(() => null);
    console.error(`failed; the page: ${JSON.stringify(status)}; screenshot ${at}`);
  }
  console.error(err.stack ?? err);
  await browser.close();
  process.exit(1);
}
await browser.close();
log("done");
console.log(JSON.stringify(summary));
