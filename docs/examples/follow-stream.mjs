// follow-stream.mjs — follow a civnode node live over GET /v1/stream, check each
// event's id and signature, and never miss one: after a disconnect (a restart,
// a network blip, a 1008 for falling behind) it reconnects with
// after_seq=<last seq it printed>, so the node replays what it missed.
//
//   CIVNODE_TOKEN=$(cat DIR/control.token) node --experimental-websocket \
//     follow-stream.mjs ws://127.0.0.1:7777 [TYPE | PREFIX.*] [AFTER_SEQ]
//
// It prints one line per event: seq, type, id. It uses the standard WebSocket
// API (global in Node 22 and later, behind --experimental-websocket in Node 20,
// and in every browser), which cannot set headers: the token goes in ?token=.
// Use a read-only observer token (civnode token create --observer) for it.
import { createHash, createPublicKey, verify } from "node:crypto";

const [base = "ws://127.0.0.1:7777", type = "", afterArg] = process.argv.slice(2);
const token = process.env.CIVNODE_TOKEN;
if (!token) {
  console.error("set CIVNODE_TOKEN to a token of the node (an observer token will do)");
  process.exit(2);
}
if (typeof WebSocket === "undefined") {
  console.error("no WebSocket in this Node: run it with node --experimental-websocket (Node 20) or Node 22+");
  process.exit(2);
}

// RFC 8785 (JCS), enough for events: keys sorted by UTF-16 code units.
function jcs(v) {
  if (v === null || typeof v !== "object") return JSON.stringify(v);
  if (Array.isArray(v)) return "[" + v.map(jcs).join(",") + "]";
  return "{" + Object.keys(v).sort().map((k) => JSON.stringify(k) + ":" + jcs(v[k])).join(",") + "}";
}

// did:key:z<base58btc(0xed 0x01 ‖ key)> → Ed25519 public key.
function keyFromDID(did) {
  const alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
  let n = 0n;
  for (const c of did.replace(/^did:key:z/, "")) n = n * 58n + BigInt(alphabet.indexOf(c));
  const bytes = Buffer.from(n.toString(16).padStart(68, "0"), "hex");
  const spki = Buffer.concat([Buffer.from("302a300506032b6570032100", "hex"), bytes.subarray(2)]);
  return createPublicKey({ key: spki, format: "der", type: "spki" });
}

// check verifies an event as docs/wire-formats.md defines it: id = SHA-256 of the JCS
// serialisation without id and signature, and the signature over the same bytes.
let key;
function check(ev) {
  key ??= keyFromDID(ev.node_did);
  const { id, signature, ...signed } = ev;
  const u = Buffer.from(jcs(signed));
  if (createHash("sha256").update(u).digest("hex") !== id) throw new Error(`seq ${ev.seq}: id does not match`);
  if (!verify(null, u, key, Buffer.from(signature, "base64"))) throw new Error(`seq ${ev.seq}: bad signature`);
}

// last is the seq of the last event printed; null until one is, when the
// follower started live only (no AFTER_SEQ).
let last = afterArg === undefined ? null : Number(afterArg);
let backoff = 1000;
let failures = 0; // connections in a row that never opened

function connect() {
  const q = new URLSearchParams({ token });
  if (type) q.set("type", type);
  if (last !== null) q.set("after_seq", String(last));
  const ws = new WebSocket(`${base}/v1/stream?${q}`);
  let opened = false;
  ws.onopen = () => {
    opened = true;
    backoff = 1000;
    failures = 0;
    console.error(`following ${base}/v1/stream${type ? ` type=${type}` : ""}${last !== null ? ` after seq ${last}` : ""}`);
  };
  ws.onmessage = (m) => {
    const ev = JSON.parse(m.data); // one event JSON and "\n"
    if (last !== null && ev.seq <= last) return; // never printed twice
    check(ev);
    console.log(`${ev.seq} ${ev.type} ${ev.id}`);
    last = ev.seq;
  };
  // A socket that closes fires close, one that never opened may fire only
  // error (Node 20): either schedules one reconnect.
  let done = false;
  const retry = (why) => {
    if (done) return;
    done = true;
    console.error(why);
    if (!opened && ++failures === 5) {
      // The API hides the HTTP answer; a bad token is a 401 before the upgrade.
      console.error("cannot connect; check the URL and the token");
      process.exit(1);
    }
    setTimeout(connect, backoff);
    backoff = Math.min(backoff * 2, 30000);
  };
  // 1008: fell behind (the reason says where to resume); 1001: the node is
  // stopping; 1006: the connection broke. All resume after the last seq.
  ws.onclose = (e) => retry(`closed: ${e.code} ${e.reason}`);
  ws.onerror = () => retry("connection failed");
}
connect();
