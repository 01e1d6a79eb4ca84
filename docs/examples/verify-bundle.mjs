// verify-bundle.mjs — verify a civnode export bundle with nothing but JCS
// (RFC 8785), SHA-256 and Ed25519, independently of civnode's own code.
//
//   node verify-bundle.mjs bundle.json      (or "-" for standard input)
//
// Exit 0 and "ok: …" when valid; exit 1 naming the first bad seq otherwise.
// It reads the whole bundle into memory, which suits an example; `civnode verify`
// streams.
import { createHash, createPublicKey, verify } from "node:crypto";
import { readFileSync } from "node:fs";

// RFC 8785: JSON.stringify already serialises strings and numbers the JCS way;
// JCS adds only that object keys are sorted by UTF-16 code units, which is what
// the default Array.prototype.sort does.
function jcs(v) {
  if (v === null || typeof v !== "object") return JSON.stringify(v);
  if (Array.isArray(v)) return "[" + v.map(jcs).join(",") + "]";
  return "{" + Object.keys(v).sort().map((k) => JSON.stringify(k) + ":" + jcs(v[k])).join(",") + "}";
}

// did:key:z<base58btc(0xed 0x01 ‖ key)> → Ed25519 public key.
function keyFromDID(did) {
  const alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
  let n = 0n;
  for (const c of did.replace(/^did:key:z/, "")) {
    const d = alphabet.indexOf(c);
    if (d < 0) throw new Error("bad did:key");
    n = n * 58n + BigInt(d);
  }
  const hex = n.toString(16).padStart(68, "0");
  const bytes = Buffer.from(hex, "hex");
  if (bytes[0] !== 0xed || bytes[1] !== 0x01 || bytes.length !== 34) throw new Error("not an ed25519 did:key");
  // Wrap the raw key in the fixed SPKI header for Ed25519 (RFC 8410).
  const spki = Buffer.concat([Buffer.from("302a300506032b6570032100", "hex"), bytes.subarray(2)]);
  return createPublicKey({ key: spki, format: "der", type: "spki" });
}

const fail = (seq, why) => {
  console.log(`invalid: ${seq ? `seq ${seq}: ` : ""}${why}`);
  process.exit(1);
};

const file = process.argv[2] ?? "-";
const bundle = JSON.parse(readFileSync(file === "-" ? 0 : file, "utf8"));
// A JSON number beyond 2^53 − 1 is not read exactly, and no log holds that
// many events.
if (!Number.isSafeInteger(bundle.event_count) || bundle.event_count < 0)
  fail(0, "event_count is not a whole number from 0 to 2^53 − 1");
const key = keyFromDID(bundle.node_did);
if (key.export({ format: "der", type: "spki" }).subarray(12).toString("base64") !== bundle.public_key)
  fail(0, "public_key does not match node_did");

// 1. The seal: Ed25519 over JCS of exactly these three keys.
const sealed = jcs({
  chain_root_hash: bundle.chain_root_hash,
  chain_tip_hash: bundle.chain_tip_hash,
  generated_at: bundle.generated_at,
});
if (!verify(null, Buffer.from(sealed), key, Buffer.from(bundle.bundle_signature, "base64")))
  fail(0, "bundle_signature does not verify");

// 2. Every event: id = sha256(U), signature over U, seq and prev_hash links.
// Everything is checked on parsed values, never on the file's bytes, so a bundle
// that was pretty-printed, reordered or re-escaped verifies just the same.
let prev = "0".repeat(64);
let prevTime = "";
bundle.events.forEach((ev, i) => {
  const seq = i + 1;
  const { id, signature, ...unsigned } = ev;
  const u = Buffer.from(jcs(unsigned));
  if (ev.seq !== seq) fail(seq, `event missing or out of order (found seq ${ev.seq})`);
  if (createHash("sha256").update(u).digest("hex") !== id) fail(seq, "id does not match content");
  if (!verify(null, u, key, Buffer.from(signature, "base64"))) fail(seq, "signature does not verify");
  if (ev.prev_hash !== prev) fail(seq, "prev_hash does not link to the previous event");
  if (ev.node_did !== bundle.node_did) fail(seq, "node_did differs from the bundle's");
  // Timestamps have one fixed-width layout, so string order is time order.
  if (ev.timestamp <= prevTime) fail(seq, "timestamp does not increase");
  // The genesis event names the key that signs the chain.
  if (seq === 1 && (ev.type !== "node.genesis" || ev.payload?.public_key !== bundle.public_key || ev.payload?.node_did !== bundle.node_did))
    fail(seq, "first event is not a genesis naming this node's key");
  prev = id;
  prevTime = ev.timestamp;
});
const events = bundle.events;
if (events.length === 0 || events[0].id !== bundle.chain_root_hash) fail(0, "chain_root_hash is not the genesis id");
if (prev !== bundle.chain_tip_hash) fail(0, "chain_tip_hash is not the last event's id");
if (bundle.event_count !== events.length) fail(0, "event_count does not match");
console.log(`ok: ${events.length} events, node ${bundle.node_did}, tip ${prev}`);
