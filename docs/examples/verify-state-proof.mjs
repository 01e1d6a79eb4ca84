// verify-state-proof.mjs — check a state proof, that a node's state map holds
// one record (or none) under a state root the node signed, with nothing but
// SHA-256, Ed25519 and JCS (RFC 8785), independently of civnode's own code
// (docs/state-proofs.md).
//
//   civnode state prove identity/did:key:z6Mk… --out proof.json
//   node verify-state-proof.mjs proof.json "$VKEY" [--witness "$WVKEY" … --quorum K] [--key KEY]
//
// checks a whole answer of GET /v1/state/proof ("-" reads standard input):
// the record, re-canonicalised with JCS, against the state root; the
// commitment, a state.committed event whose payload {through_seq, state_root,
// entries} is the answer's, signed by the node of VKEY and included in a
// checkpoint VKEY signed (the checks of check-inclusion.mjs, which this
// imports); with --witness, K (default 1) of those witnesses' cosignatures on
// the checkpoint, of any age; with --key, that the answer is of that key. VKEY is the
// node's note verifier key as you trust it, never the one in the file. Exit 0
// and "ok: …", or exit 1 and "invalid: …".
//
//   node verify-state-proof.mjs --vectors statemap/testdata/vectors.json
//
// runs every case of a vectors file: it rebuilds each map's root from its
// entries, and requires each proof marked valid to verify and each other one
// to be refused. One line per case ("pass: …" or "FAIL: …"), then exit 0 and
// "ok: …", or exit 1 and "invalid: …"; exit 2 for a mistake on the command
// line.
//
// As a module:
//
//   import { verifyStateProof, verifyStateAnswer } from "./verify-state-proof.mjs";
//   verifyStateProof({ root, key, value, proof });
//   verifyStateAnswer(answer, { verifierKey, witnessKeys, quorum, key });
//
// verifyStateProof checks the tree part only: root is the state root in
// base64, key the record's key "<kind>/<id>", value the record's bytes (its
// RFC 8785 JCS text, as a string or bytes) or null for absence, and proof
// {siblings, key_hash?, value_hash?}. It returns what the proof showed, or
// throws a StateProofError that says why not. verifyStateAnswer checks a
// whole answer, parsed, as the command line does, and returns what it showed
// or throws a StateProofError or an InclusionError.
import { createHash } from "node:crypto";
import { readFileSync, realpathSync } from "node:fs";
import { pathToFileURL } from "node:url";

import { checkInclusion, InclusionError, jcs } from "./check-inclusion.mjs";

// DEPTH is the tree's depth: one level per bit of a key hash.
export const DEPTH = 256;
const EMPTY = Buffer.alloc(32);

// StateProofError is a refused proof. kind "format" is a shape no honest tree
// yields; kind "mismatch" is a well-formed proof that does not fold to the
// root (the value, the key, a sibling or the root differs).
export class StateProofError extends Error {
  constructor(kind, message) {
    super(message);
    this.name = "StateProofError";
    this.kind = kind;
  }
}

const malformed = (why) => {
  throw new StateProofError("format", `malformed state proof: ${why}`);
};

const sha256 = (...parts) => createHash("sha256").update(Buffer.concat(parts.map((p) => Buffer.from(p)))).digest();
const leafHash = (k, valueHash) => sha256([0x00], k, valueHash);
const nodeHash = (left, right) => sha256([0x01], left, right);

// Bit i of h, most significant first: bit 0 chooses the root's child, and 0
// is left.
const bit = (h, i) => (h[i >> 3] >> (7 - (i & 7))) & 1;

// How many leading bits a and b share (DEPTH when equal).
function commonPrefix(a, b) {
  for (let i = 0; i < DEPTH; i++) if (bit(a, i) !== bit(b, i)) return i;
  return DEPTH;
}

// A hash is exactly 32 bytes of standard base64 with padding, in its one
// spelling: decoding and encoding again must give the text back, which
// refuses what Buffer.from alone lets through (URL-safe letters, no padding,
// stray bits, whitespace), so a proof has one text form. refuse says whose
// fault a bad hash is: the proof's, unless it is the root.
function hash(text, what, refuse = malformed) {
  if (typeof text !== "string") refuse(`${what} is not a base64 string`);
  const b = Buffer.from(text, "base64");
  if (b.length !== 32 || b.toString("base64") !== text) refuse(`${what} is not 32 bytes of standard base64: ${JSON.stringify(text)}`);
  return b;
}

// The record's bytes: a string is its UTF-8 text.
function recordBytes(value) {
  if (typeof value === "string") return Buffer.from(value, "utf8");
  if (value instanceof Uint8Array) return Buffer.from(value);
  throw new TypeError("value must be the record's bytes (a string or a Uint8Array), or null for absence");
}

// verifyStateProof checks that proof shows, under root, key's record to be
// value, or key to have no record when value is null. It returns
// {membership, depth}, or throws a StateProofError.
export function verifyStateProof({ root, key, value, proof }) {
  if (typeof key !== "string") throw new TypeError("key must be the record's key, a string <kind>/<id>");
  if (value === undefined) throw new TypeError("value must be the record's bytes, or null for absence");
  const k = sha256(key);
  const valueHash = value === null ? null : sha256(recordBytes(value));
  const badRoot = (why) => {
    throw new StateProofError("format", why);
  };
  return verifyStateProofHash({ root: hash(root, "the state root", badRoot), k, valueHash, proof });
}

// verifyStateProofHash is verifyStateProof over the key hash k and the value
// hash (null for absence), as Buffers: what a mirror that keeps only hashes
// checks.
export function verifyStateProofHash({ root, k, valueHash, proof }) {
  if (proof === null || typeof proof !== "object") malformed("the proof is not an object");
  if (!Array.isArray(proof.siblings)) malformed("siblings is not an array");
  const d = proof.siblings.length;
  if (d > DEPTH) malformed(`${d} siblings, more than ${DEPTH}`);
  // An honest node omits key_hash and value_hash when it has none to give;
  // null is not a hash.
  const hasKey = proof.key_hash !== undefined;
  if (hasKey !== (proof.value_hash !== undefined)) malformed("key_hash and value_hash go together");
  const siblings = proof.siblings.map((s, i) => hash(s, `sibling ${i}`));
  // The subtree above an empty sibling holds the same entries as the one
  // below it, so an honest proof stops there: it is the only proof of the key
  // that can fold to the root.
  if (d > 0 && siblings[d - 1].equals(EMPTY)) malformed(`the sibling at depth ${d - 1} is empty`);

  // The hash at depth d: the key's own entry (membership), another entry on
  // its path (absence), or an empty subtree (absence).
  let h;
  if (valueHash !== null && hasKey) malformed("a membership proof names another entry");
  if (valueHash !== null) h = leafHash(k, valueHash);
  else if (hasKey) {
    const otherKey = hash(proof.key_hash, "key_hash");
    const otherValue = hash(proof.value_hash, "value_hash");
    if (otherKey.equals(k)) malformed("the other entry is the key itself");
    if (commonPrefix(otherKey, k) < d) malformed(`the other entry is not on the key's path to depth ${d}`);
    h = leafHash(otherKey, otherValue);
  } else h = EMPTY;

  // Fold upwards, from depth d-1 to 0: the key's bit says on which side the
  // path runs.
  for (let i = d - 1; i >= 0; i--) h = bit(k, i) === 1 ? nodeHash(siblings[i], h) : nodeHash(h, siblings[i]);
  if (!h.equals(root))
    throw new StateProofError("mismatch", `the state proof does not lead to the root: it folds to ${h.toString("base64")}, not ${root.toString("base64")}`);
  return { membership: valueHash !== null, depth: d };
}

// stateRoot is the root of the map holding entries [{k, valueHash}], by the
// tree's three rules alone: an empty subtree is EMPTY, one entry is its leaf
// whatever the depth, two or more are a node over their two sides.
export function stateRoot(entries) {
  const subtree = (es, depth) => {
    if (es.length === 0) return EMPTY;
    if (es.length === 1) return leafHash(es[0].k, es[0].valueHash);
    if (depth === DEPTH) throw new Error("two entries have one key");
    const side = (b) => subtree(es.filter((e) => bit(e.k, depth) === b), depth + 1);
    return nodeHash(side(0), side(1));
  };
  return subtree(entries, 0);
}

// runVectors checks a vectors file ({maps: [{name, entries: [{key, value,
// key_hash, value_hash}], state_root, proofs: [{name, valid, key, value,
// siblings, key_hash?, value_hash?}]}]}) and says whether every case came
// out as the file expects.
function runVectors(file) {
  const vectors = JSON.parse(readFileSync(file === "-" ? 0 : file, "utf8"));
  let cases = 0;
  let failed = 0;
  const report = (ok, what) => {
    cases++;
    if (!ok) failed++;
    console.log(`${ok ? "pass" : "FAIL"}: ${what}`);
  };
  for (const m of vectors.maps ?? []) {
    // The map's root, rebuilt from its entries, and each entry's hashes.
    try {
      const entries = m.entries.map((e) => {
        const k = sha256(e.key);
        const valueHash = sha256(recordBytes(e.value));
        if (e.key_hash !== undefined && !hash(e.key_hash, "key_hash").equals(k)) throw new Error(`${e.key}: key_hash is not SHA-256 of the key`);
        if (e.value_hash !== undefined && !hash(e.value_hash, "value_hash").equals(valueHash)) throw new Error(`${e.key}: value_hash is not SHA-256 of the value`);
        return { k, valueHash };
      });
      const root = stateRoot(entries).toString("base64");
      report(root === m.state_root, `${m.name}: root of ${entries.length} entries ${root === m.state_root ? "is" : `is ${root}, not`} ${m.state_root}`);
    } catch (e) {
      report(false, `${m.name}: root: ${e.message}`);
    }
    for (const c of m.proofs ?? []) {
      const what = `${m.name}: ${c.name}`;
      const proof = { siblings: c.siblings, key_hash: c.key_hash, value_hash: c.value_hash };
      try {
        const shown = verifyStateProof({ root: m.state_root, key: c.key, value: c.value, proof });
        report(c.valid === true, `${what}: ${shown.membership ? "membership" : "absence"} at depth ${shown.depth} ${c.valid ? "verifies" : "verifies, but the file says it must be refused"}`);
      } catch (e) {
        // A refused proof must be refused as a proof (StateProofError), not
        // for a fault of the file.
        const refused = e instanceof StateProofError;
        report(c.valid === false && refused, `${what}: ${c.valid ? "must verify, but " : ""}${refused ? "refused" : "error"}: ${e.message}`);
      }
    }
  }
  if (cases === 0 || failed > 0) {
    console.log(`invalid: ${failed} of ${cases} cases of ${file} failed`);
    return 1;
  }
  console.log(`ok: ${cases} cases of ${file}`);
  return 0;
}

// The members of an answer of GET /v1/state/proof; key_hash and value_hash
// only for an absence that ends at another entry.
const ANSWER_MEMBERS = ["key", "value", "through_seq", "state_root", "entries", "siblings", "key_hash", "value_hash", "commitment"];
const REQUIRED_MEMBERS = ["key", "value", "through_seq", "state_root", "entries", "siblings", "commitment"];

// verifyStateAnswer checks a whole answer of GET /v1/state/proof, parsed:
// the commitment (checkInclusion with the trusted verifierKey and
// witnesses), that its event is a state.committed whose payload is the
// answer's root, entries and through_seq, and the record against the root.
// It returns {key, value (the JCS text, or null), throughSeq, root, entries,
// seq, size, name, cosigned}.
export function verifyStateAnswer(a, { verifierKey, witnessKeys = [], quorum = 1, key } = {}) {
  if (typeof verifierKey !== "string") throw new TypeError("verifierKey must be the node's verifier key as you trust it");
  if (a === null || typeof a !== "object" || Array.isArray(a)) malformed("the answer is not an object");
  for (const m of Object.keys(a)) if (!ANSWER_MEMBERS.includes(m)) malformed(`the answer has a member ${JSON.stringify(m)} the format does not`);
  for (const m of REQUIRED_MEMBERS) if (!(m in a)) malformed(`the answer has no ${m}`);
  if (typeof a.key !== "string") malformed("key is not a string");
  if (key !== undefined && a.key !== key) throw new StateProofError("mismatch", `the answer is of ${a.key}, not ${key}`);

  // The commitment: signed by the trusted key, in a checkpoint it signed.
  if (a.commitment === null || typeof a.commitment !== "object" || typeof a.commitment.checkpoint !== "string" || typeof a.commitment.event !== "object")
    malformed("the commitment is not a proof of an event in a checkpoint");
  const c = checkInclusion(a.commitment, { verifierKey, witnessKeys, quorum });
  const ev = a.commitment.event;
  if (ev.type !== "state.committed") throw new StateProofError("mismatch", `the commitment event ${c.seq} is a ${ev.type}, not a state.committed`);
  const pl = ev.payload ?? {};
  const plMembers = Object.keys(pl).sort().join(",");
  if (plMembers !== "entries,state_root,through_seq") malformed(`the payload of state.committed ${c.seq} has the members ${plMembers}`);
  if (pl.through_seq !== a.through_seq || pl.state_root !== a.state_root || pl.entries !== a.entries)
    throw new StateProofError(
      "mismatch",
      `the answer's through_seq ${a.through_seq}, state_root ${a.state_root}, entries ${a.entries} are not those state.committed ${c.seq} signs: ${pl.through_seq}, ${pl.state_root}, ${pl.entries}`,
    );
  if (!Number.isSafeInteger(a.through_seq) || a.through_seq < 0 || a.through_seq >= c.seq)
    throw new StateProofError("mismatch", `state.committed ${c.seq} commits to the state through seq ${a.through_seq}, not before it`);

  // The record: its JCS text is what the tree hashes.
  const value = a.value === null ? null : jcs(a.value);
  const proof = { siblings: a.siblings };
  if ("key_hash" in a) proof.key_hash = a.key_hash;
  if ("value_hash" in a) proof.value_hash = a.value_hash;
  try {
    verifyStateProof({ root: a.state_root, key: a.key, value, proof });
  } catch (e) {
    if (!(e instanceof StateProofError)) throw e;
    throw new StateProofError(e.kind, `the ${value === null ? "absence" : "record"} of ${a.key} under the state root: ${e.message}`);
  }
  return { key: a.key, value, throughSeq: a.through_seq, root: a.state_root, entries: a.entries, seq: c.seq, size: c.size, name: c.name, cosigned: c.cosigned };
}

// short is a record's JCS text cut to 60 characters, or "absent".
function short(value) {
  if (value === null) return "absent";
  const chars = [...value];
  return chars.length <= 60 ? value : chars.slice(0, 59).join("") + "…";
}

// runAnswer checks the answer in file as verifyStateAnswer does and prints
// one line.
function runAnswer(file, opts) {
  try {
    const a = JSON.parse(readFileSync(file === "-" ? 0 : file, "utf8"));
    const v = verifyStateAnswer(a, opts);
    const witnessed = opts.witnessKeys.length > 0 ? `, witnessed by ${v.cosigned} of ${opts.witnessKeys.length}` : "";
    console.log(`ok: ${v.key} = ${short(v.value)} through seq ${v.throughSeq}, root ${v.root}, in the tree of ${v.size} events signed by ${v.name}${witnessed}`);
    return 0;
  } catch (e) {
    if (!(e instanceof StateProofError || e instanceof InclusionError || e instanceof SyntaxError)) throw e;
    console.log(`invalid: ${e.message}`);
    return 1;
  }
}

function main(args) {
  const usage = () => {
    console.error("usage: node verify-state-proof.mjs FILE VKEY [--witness WVKEY …] [--quorum K] [--key KEY]\n       node verify-state-proof.mjs --vectors FILE");
    return 2;
  };
  let vectors;
  const positional = [];
  const witnessKeys = [];
  let quorum = 1;
  let key;
  while (args.length > 0) {
    const a = args.shift();
    if (a === "--vectors" && args.length > 0) vectors = args.shift();
    else if (a === "--witness" && args.length > 0) witnessKeys.push(args.shift());
    else if (a === "--quorum" && args.length > 0) quorum = Number(args.shift());
    else if (a === "--key" && args.length > 0) key = args.shift();
    else if (a.startsWith("--")) return usage();
    else positional.push(a);
  }
  if (vectors !== undefined) return positional.length === 0 && witnessKeys.length === 0 && key === undefined ? runVectors(vectors) : usage();
  if (positional.length !== 2) return usage();
  if (!Number.isInteger(quorum) || quorum < 1 || quorum > Math.max(witnessKeys.length, 1)) {
    console.error("--quorum must be from 1 to the number of --witness keys");
    return 2;
  }
  return runAnswer(positional[0], { verifierKey: positional[1], witnessKeys, quorum, key });
}

// Run as a program, not when imported.
if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) process.exitCode = main(process.argv.slice(2));
