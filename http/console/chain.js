// chain.js: checks in the browser that the events the console shows are the
// node's chain (docs/wire-formats.md, docs/verifying.md): each event's seq follows
// the last one's, its prev_hash is the last one's id, and, where the browser
// can, its id is the SHA-256 of its signed bytes and its signature verifies
// with the node's key. It touches no DOM, so the same module runs under node
// in the tests (testdata/console-e2e/chain-check.mjs).

export const GENESIS_PREV = "0".repeat(64);

const BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

// jcs is RFC 8785 for the values an event holds: keys sorted by UTF-16 code
// units (JavaScript's own sort), strings and numbers as JSON.stringify writes
// them, which is what RFC 8785 specifies.
export function jcs(v) {
  if (v === null || typeof v !== "object") return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(jcs).join(",")}]`;
  return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${jcs(v[k])}`).join(",")}}`;
}

// keyFromDID is the 32-byte Ed25519 key of a did:key (z + base58btc of
// 0xed 0x01 and the key), or null.
export function keyFromDID(did) {
  if (typeof did !== "string" || !did.startsWith("did:key:z")) return null;
  let n = 0n;
  for (const c of did.slice("did:key:z".length)) {
    const i = BASE58.indexOf(c);
    if (i < 0) return null;
    n = n * 58n + BigInt(i);
  }
  const hex = n.toString(16).padStart(68, "0");
  if (hex.length !== 68 || !hex.startsWith("ed01")) return null;
  const key = new Uint8Array(32);
  for (let i = 0; i < 32; i++) key[i] = parseInt(hex.slice(4 + 2 * i, 6 + 2 * i), 16);
  return key;
}

function hex(buf) {
  return Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, "0")).join("");
}

function base64(s) {
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

const shortHash = (h) => (typeof h === "string" ? `${h.slice(0, 12)}…` : String(h));

// ChainChecker checks events in seq order. Give it where the stream starts
// (afterSeq: the first event must be afterSeq + 1; 0 means genesis, whose
// prev_hash is 64 zeros) and, when known, the tip GET /v1/state reported
// (anchor {seq, id}): the event at that seq must have that id, which ties the
// replayed events to the snapshot the rest of the console shows. A break is
// kept: the first one stays reported whatever follows.
export class ChainChecker {
  constructor({ afterSeq = null, anchor = null, nodeDID = null, crypto = globalThis.crypto } = {}) {
    this.anchor = anchor;
    this.nodeDID = nodeDID;
    this.lastSeq = afterSeq;
    this.lastId = afterSeq === 0 ? GENESIS_PREV : anchor && anchor.seq === afterSeq ? anchor.id : null;
    this.subtle = crypto?.subtle ?? null;
    this.checked = 0; // events seen
    this.links = 0; // prev_hash links found intact
    this.broken = null; // the first break: {seq, reason}
    // Whether ids and signatures are recomputed; a string says why not.
    this.hashes = this.subtle ? true : "it needs a secure context (https, or the node on localhost)";
    this.signatures = this.subtle ? null : this.hashes; // null: not tried yet
    this.key = null;
  }

  async check(ev) {
    const problems = [];
    let link = "first";
    if (ev === null || typeof ev !== "object" || !Number.isSafeInteger(ev.seq) || typeof ev.id !== "string") {
      return this.record(ev, "broken", ["the message is not an event"]);
    }
    if (this.lastSeq !== null && ev.seq !== this.lastSeq + 1) {
      problems.push(ev.seq > this.lastSeq + 1
        ? `a gap: seq ${ev.seq} came after seq ${this.lastSeq}`
        : `seq ${ev.seq} came again, or out of order, after seq ${this.lastSeq}`);
    } else if (ev.seq === 1 || this.lastId !== null) {
      const want = ev.seq === 1 ? GENESIS_PREV : this.lastId;
      if (ev.prev_hash === want) link = "linked";
      else problems.push(ev.seq === 1
        ? "the genesis event's prev_hash is not 64 zeros"
        : `prev_hash ${shortHash(ev.prev_hash)} is not the id of seq ${this.lastSeq} (${shortHash(want)})`);
    }
    this.nodeDID ??= ev.node_did;
    if (ev.node_did !== this.nodeDID) problems.push(`signed by ${ev.node_did}, not by this node`);
    if (this.anchor && ev.seq === this.anchor.seq && ev.id !== this.anchor.id) {
      problems.push(`its id ${shortHash(ev.id)} is not the tip ${shortHash(this.anchor.id)} the node reported for seq ${ev.seq}`);
    }
    problems.push(...(await this.verify(ev)));
    return this.record(ev, problems.length ? "broken" : link, problems);
  }

  record(ev, link, problems) {
    this.checked++;
    if (link === "linked") this.links++;
    if (problems.length && !this.broken) this.broken = { seq: ev?.seq ?? null, reason: problems[0] };
    if (ev && Number.isSafeInteger(ev.seq)) {
      this.lastSeq = ev.seq;
      this.lastId = typeof ev.id === "string" ? ev.id : null;
    }
    return { link, problems };
  }

  // verify recomputes the id and checks the signature over the signed bytes:
  // the event without id and signature, in RFC 8785 form.
  async verify(ev) {
    if (this.hashes !== true) return [];
    const { id, signature, ...signed } = ev;
    const bytes = new TextEncoder().encode(jcs(signed));
    const problems = [];
    if (hex(await this.subtle.digest("SHA-256", bytes)) !== id) {
      problems.push(`its id is not the SHA-256 of its content`);
    }
    if (this.signatures === null) await this.importKey(ev.node_did);
    if (this.signatures === true) {
      let ok = false;
      try {
        ok = await this.subtle.verify({ name: "Ed25519" }, this.key, base64(signature), bytes);
      } catch {
        ok = false; // a signature that is not base64 of 64 bytes
      }
      if (!ok) problems.push("its signature does not verify with the node's key");
    }
    return problems;
  }

  async importKey(did) {
    const raw = keyFromDID(did);
    if (!raw) {
      this.signatures = "the node's DID is not an Ed25519 did:key";
      return;
    }
    try {
      this.key = await this.subtle.importKey("raw", raw, { name: "Ed25519" }, false, ["verify"]);
      this.signatures = true;
    } catch {
      this.signatures = "this browser has no Ed25519 in WebCrypto";
    }
  }

  // summary is what the indicator shows.
  summary() {
    if (this.broken) {
      return { state: "broken", text: `Chain broken at seq ${this.broken.seq}: ${this.broken.reason}.` };
    }
    if (this.checked === 0) return { state: "waiting", text: "Waiting for the first event…" };
    const also = [];
    also.push(this.hashes === true ? "ids recomputed" : `ids not recomputed: ${this.hashes}`);
    also.push(this.signatures === true ? "signatures verified" : `signatures not verified: ${this.signatures ?? "no key yet"}`);
    return {
      state: "ok",
      text: `Chain intact: ${this.links} link${this.links === 1 ? "" : "s"} checked through seq ${this.lastSeq}; ${also.join("; ")}.`,
    };
  }
}
