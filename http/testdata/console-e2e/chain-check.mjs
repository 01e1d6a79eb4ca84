// chain-check.mjs: the console's chain-link checker (http/console/chain.js),
// the module the browser runs, under node against a node's real events and
// tampered copies of them. http/console_browser_test.go (TestConsoleChainChecker)
// runs it with CIVNODE_EVENTS naming a file that holds a GET /v1/events body
// from genesis. It prints {"cases":[…]} and exits 1 on the first failure.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";

import { ChainChecker, GENESIS_PREV, jcs, keyFromDID } from "../../console/chain.js";

const { events } = JSON.parse(readFileSync(process.env.CIVNODE_EVENTS, "utf8"));
assert.ok(events.length >= 8, `want at least 8 events, got ${events.length}`);
assert.equal(events[0].seq, 1, "the events must start at genesis");

const clone = (v) => JSON.parse(JSON.stringify(v));
const rehash = (ev) => {
  const { id, signature, ...signed } = ev;
  return { ...ev, id: createHash("sha256").update(jcs(signed)).digest("hex") };
};

async function run(checker, evs) {
  const results = [];
  for (const ev of evs) results.push(await checker.check(ev));
  return results;
}

const cases = [];
async function test(name, fn) {
  await fn();
  cases.push(name);
}

const n = events.length;
const k = 5; // the event tampered with; neither genesis nor the last

await test("intact from genesis", async () => {
  const c = new ChainChecker({ afterSeq: 0 });
  const res = await run(c, events);
  assert.deepEqual(res.map((r) => r.link), events.map(() => "linked"));
  assert.equal(c.links, n);
  assert.equal(c.hashes, true);
  assert.equal(c.signatures, true, "node has Ed25519 in WebCrypto; the browser test checks chromium's");
  assert.equal(c.summary().state, "ok");
  assert.match(c.summary().text, new RegExp(`${n} links checked through seq ${n}; ids recomputed; signatures verified`));
});

await test("replay ending at the reported tip", async () => {
  const c = new ChainChecker({ afterSeq: n - 4, anchor: { seq: n, id: events[n - 1].id } });
  const res = await run(c, events.slice(n - 4));
  assert.deepEqual(res.map((r) => r.link), ["first", "linked", "linked", "linked"]);
  assert.equal(c.summary().state, "ok");
});

await test("live from the tip", async () => {
  const c = new ChainChecker({ afterSeq: n - 2, anchor: { seq: n - 2, id: events[n - 3].id } });
  const res = await run(c, events.slice(n - 2));
  assert.deepEqual(res.map((r) => r.link), ["linked", "linked"]);
});

await test("tip other than reported", async () => {
  const c = new ChainChecker({ afterSeq: n - 4, anchor: { seq: n, id: events[n - 2].id } });
  await run(c, events.slice(n - 4));
  assert.equal(c.broken?.seq, n);
  assert.match(c.broken.reason, /is not the tip/);
});

await test("gap", async () => {
  const c = new ChainChecker({ afterSeq: 0 });
  const res = await run(c, events.filter((ev) => ev.seq !== k));
  assert.equal(res[k - 1].link, "broken");
  assert.deepEqual(c.broken, { seq: k + 1, reason: `a gap: seq ${k + 1} came after seq ${k - 1}` });
});

await test("repeat", async () => {
  const c = new ChainChecker({ afterSeq: 0 });
  await run(c, [...events.slice(0, k), events[k - 1], ...events.slice(k)]);
  assert.equal(c.broken?.seq, k);
  assert.match(c.broken.reason, /came again, or out of order/);
});

await test("prev_hash rewritten", async () => {
  const evs = clone(events);
  evs[k - 1].prev_hash = evs[k - 3].id;
  const c = new ChainChecker({ afterSeq: 0 });
  await run(c, evs);
  assert.equal(c.broken?.seq, k);
  assert.match(c.broken.reason, new RegExp(`prev_hash .* is not the id of seq ${k - 1}`));
});

await test("payload changed, id kept", async () => {
  const evs = clone(events);
  evs[k - 1].payload = { ...evs[k - 1].payload, forged: true };
  const c = new ChainChecker({ afterSeq: 0 });
  await run(c, evs);
  assert.deepEqual(c.broken, { seq: k, reason: "its id is not the SHA-256 of its content" });
});

await test("payload changed, id recomputed", async () => {
  // The forger fixes the id but cannot sign: the signature gives it away,
  // and the next event's link too.
  const evs = clone(events);
  evs[k - 1] = rehash({ ...evs[k - 1], payload: { ...evs[k - 1].payload, forged: true } });
  const c = new ChainChecker({ afterSeq: 0 });
  const res = await run(c, evs);
  assert.deepEqual(c.broken, { seq: k, reason: "its signature does not verify with the node's key" });
  assert.match(res[k].problems[0], /prev_hash/);
});

await test("genesis prev_hash", async () => {
  const evs = clone(events);
  evs[0] = rehash({ ...evs[0], prev_hash: "1".repeat(64) });
  const c = new ChainChecker({ afterSeq: 0 });
  await run(c, evs.slice(0, 2));
  assert.equal(c.broken?.seq, 1);
  assert.match(c.broken.reason, /genesis event's prev_hash is not 64 zeros/);
  assert.equal(GENESIS_PREV, "0".repeat(64));
});

await test("another node", async () => {
  const c = new ChainChecker({ afterSeq: 0, nodeDID: "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK" });
  await run(c, events.slice(0, 1));
  assert.match(c.broken?.reason ?? "", /not by this node/);
});

await test("a break stays reported", async () => {
  const c = new ChainChecker({ afterSeq: 0 });
  await run(c, events.filter((ev) => ev.seq !== k));
  await run(c, []);
  assert.equal(c.summary().state, "broken");
  assert.match(c.summary().text, new RegExp(`^Chain broken at seq ${k + 1}: a gap`));
});

await test("without WebCrypto, links only", async () => {
  const evs = clone(events);
  evs[k - 1].payload = { ...evs[k - 1].payload, forged: true };
  const c = new ChainChecker({ afterSeq: 0, crypto: {} });
  await run(c, evs);
  // An unhashed copy cannot tell a forged payload, and says so.
  assert.equal(c.broken, null);
  assert.match(c.summary().text, /ids not recomputed: it needs a secure context/);
  evs[k].prev_hash = GENESIS_PREV;
  const d = new ChainChecker({ afterSeq: 0, crypto: {} });
  await run(d, evs);
  assert.equal(d.broken?.seq, k + 1);
});

await test("did:key decoding", async () => {
  const key = keyFromDID(events[0].node_did);
  assert.equal(Buffer.from(key).toString("base64"), events[0].payload.public_key);
  assert.equal(keyFromDID("did:key:z0OIl"), null);
  assert.equal(keyFromDID("did:web:example.com"), null);
});

console.log(JSON.stringify({ cases }));
