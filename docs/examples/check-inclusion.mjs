// check-inclusion.mjs — check the output of `civnode transparency prove` with
// nothing but SHA-256, Ed25519 and JCS (RFC 8785), independently of civnode's
// own code and of Go's tlog package (docs/transparency.md):
//
//   civnode transparency prove 7 > proof.json
//   node check-inclusion.mjs proof.json "$VKEY"      (or "-" for standard input)
//
// VKEY is the node's note verifier key as you trust it (from a previous
// `civnode transparency check`, or the node's operator). Without it the key in
// the input is used, which proves only that the node agrees with itself.
//
// To require witnesses (a checkpoint that the node cannot have shown anyone
// else a different history for), prove in the witnessed tree and name them:
//
//   civnode transparency prove 7 --witnessed > proof.json
//   node check-inclusion.mjs proof.json "$VKEY" --witness "$WVKEY" [--witness …] [--quorum K]
//
// Then K (default 1) of those witnesses must have cosigned the checkpoint
// (C2SP tlog-cosignature: an Ed25519 signature, key type 0x04, over
// "cosignature/v1\ntime <t>\n" and the note's text). Their age is not checked
// here; `civnode transparency check --max-age` does that.
//
// It checks that the checkpoint is a signed note (C2SP signed-note) by that key
// over origin, tree size and root (C2SP tlog-checkpoint); that the event hashes
// to its id and is signed by the same key; and that the leaf SHA-256(0x00 ‖ id)
// is in the tree by the RFC 9162 §2.1.3.2 inclusion proof. Exit 0 and "ok: …",
// or exit 1 and "invalid: …".
//
// As a module (verify-state-proof.mjs checks a state proof's commitment so):
//
//   import { checkInclusion, InclusionError, jcs } from "./check-inclusion.mjs";
//   checkInclusion(proof, { verifierKey, witnessKeys, quorum });
//
// returns {seq, id, size, root, name, did, cosigned} or throws an
// InclusionError whose message is the "invalid: …" reason.
import { createHash, createPublicKey, verify } from "node:crypto";
import { readFileSync, realpathSync } from "node:fs";
import { pathToFileURL } from "node:url";

// InclusionError is a proof that does not check; its message says why.
export class InclusionError extends Error {
  constructor(message) {
    super(message);
    this.name = "InclusionError";
  }
}

const fail = (why) => {
  throw new InclusionError(why);
};
const sha256 = (...parts) => createHash("sha256").update(Buffer.concat(parts.map((p) => Buffer.from(p)))).digest();

// RFC 8785: JSON.stringify already writes strings and numbers the JCS way; JCS
// adds only that object keys are sorted by UTF-16 code units.
export function jcs(v) {
  if (v === null || typeof v !== "object") return JSON.stringify(v);
  if (Array.isArray(v)) return "[" + v.map(jcs).join(",") + "]";
  return "{" + Object.keys(v).sort().map((k) => JSON.stringify(k) + ":" + jcs(v[k])).join(",") + "}";
}

// did:key:z<base58btc(0xed 0x01 ‖ key)> → the 32 bytes of the Ed25519 key.
function keyOfDID(did) {
  const alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
  let n = 0n;
  for (const c of did.replace(/^did:key:z/, "")) {
    const d = alphabet.indexOf(c);
    if (d < 0) fail("the key's name is not a did:key");
    n = n * 58n + BigInt(d);
  }
  const bytes = Buffer.from(n.toString(16).padStart(68, "0"), "hex");
  if (bytes.length !== 34 || bytes[0] !== 0xed || bytes[1] !== 0x01) fail("the key's name is not an Ed25519 did:key");
  return bytes.subarray(2);
}

const ed25519Key = (raw) =>
  createPublicKey({ key: Buffer.concat([Buffer.from("302a300506032b6570032100", "hex"), raw]), format: "der", type: "spki" });

// checkInclusion checks proof p, the object `civnode transparency prove`
// prints, with the node's verifier key as the caller trusts it (without one,
// the key p names), and with witnessKeys, that quorum of them cosigned its
// checkpoint. It returns what p showed, or throws an InclusionError.
export function checkInclusion(p, { verifierKey, witnessKeys = [], quorum = 1 } = {}) {
  // 1. The verifier key: <name>+<8 hex key hash>+base64(0x01 ‖ key), the hash
  // being the first 4 bytes of SHA-256(name ‖ "\n" ‖ 0x01 ‖ key); the name is
  // civnode/<did>, the did:key of the same key.
  const vkey = verifierKey ?? p.verifier_key;
  const m = /^([^+]+)\+([0-9a-f]{8})\+(.+)$/.exec(vkey ?? "");
  if (!m) fail("the verifier key is not <name>+<hash>+<key>");
  const [, name, keyHash, key64] = m;
  const keyBytes = Buffer.from(key64, "base64");
  if (keyBytes.length !== 33 || keyBytes[0] !== 0x01) fail("the verifier key is not an Ed25519 key");
  if (sha256(name, "\n", keyBytes).subarray(0, 4).toString("hex") !== keyHash) fail("the verifier key's hash does not match");
  const did = name.replace(/^civnode\//, "");
  if (!name.startsWith("civnode/") || !keyOfDID(did).equals(keyBytes.subarray(1))) fail("the verifier key's name is not the did of its key");
  const key = ed25519Key(keyBytes.subarray(1));

  // 2. The checkpoint: the note's text, a blank line, then signature lines
  // "— <name> base64(4-byte key hash ‖ signature)"; one must be this key's,
  // over the text.
  const note = p.checkpoint;
  const split = note.lastIndexOf("\n\n");
  const text = note.slice(0, split + 1);
  const signed = note
    .slice(split + 2)
    .split("\n")
    .filter((line) => line.startsWith(`— ${name} `))
    .map((line) => Buffer.from(line.slice(line.lastIndexOf(" ") + 1), "base64"))
    .some((sig) => sig.length === 68 && sig.subarray(0, 4).toString("hex") === keyHash && verify(null, Buffer.from(text), key, sig.subarray(4)));
  if (split < 0 || !signed) fail(`the checkpoint is not signed by ${vkey}`);
  const [origin, sizeLine, root64] = text.split("\n");
  if (origin !== name) fail(`the checkpoint's origin is ${origin}, not ${name}`);
  if (!/^[0-9]+$/.test(sizeLine)) fail("the checkpoint's tree size is not a number");
  const size = BigInt(sizeLine);
  // No log holds more than 2^53 − 1 records, the largest size a JSON number
  // carries exactly; civnode and tlogcheck refuse larger ones too.
  if (size > BigInt(Number.MAX_SAFE_INTEGER)) fail(`the checkpoint's tree size ${size} is beyond 2^53 − 1`);
  const root = Buffer.from(root64, "base64");
  if (root.length !== 32) fail("the checkpoint's root is not 32 bytes");
  if (BigInt(p.tree_size) !== size || p.root_hash !== root64) fail("tree_size and root_hash are not the checkpoint's");

  // 2b. The witnesses: each cosignature line is "— <name> base64(4-byte key
  // hash ‖ 8-byte big-endian time t ‖ signature)", the signature over
  // "cosignature/v1\ntime <t>\n" followed by the note's text; the witness's key
  // is <name>+<hash>+base64(0x04 ‖ key), the hash over name ‖ "\n" ‖ 0x04 ‖ key.
  let cosigned = 0;
  if (witnessKeys.length > 0) {
    const lines = note.slice(split + 2).split("\n");
    for (const wkey of witnessKeys) {
      const w = /^([^+]+)\+([0-9a-f]{8})\+(.+)$/.exec(wkey);
      if (!w) fail(`the witness key ${wkey} is not <name>+<hash>+<key>`);
      const wBytes = Buffer.from(w[3], "base64");
      if (wBytes.length !== 33 || wBytes[0] !== 0x04) fail(`the witness key ${wkey} is not a cosignature/v1 key`);
      if (sha256(w[1], "\n", wBytes).subarray(0, 4).toString("hex") !== w[2]) fail(`the witness key ${wkey}'s hash does not match`);
      const wk = ed25519Key(wBytes.subarray(1));
      const ok = lines
        .filter((line) => line.startsWith(`— ${w[1]} `))
        .map((line) => Buffer.from(line.slice(line.lastIndexOf(" ") + 1), "base64"))
        .some((sig) => {
          if (sig.length !== 76 || sig.subarray(0, 4).toString("hex") !== w[2]) return false;
          const t = sig.readBigUInt64BE(4);
          return verify(null, Buffer.concat([Buffer.from(`cosignature/v1\ntime ${t}\n`), Buffer.from(text)]), wk, sig.subarray(12));
        });
      if (ok) cosigned++;
    }
    if (cosigned < quorum) fail(`not witnessed: ${cosigned} of ${quorum} cosignatures`);
  }

  // 3. The event: id = SHA-256 of U, the JCS of the event without id and
  // signature; the signature is Ed25519 over U by the node's key.
  const { id, signature, ...unsigned } = p.event;
  const u = Buffer.from(jcs(unsigned));
  if (sha256(u).toString("hex") !== id || p.event_id !== id) fail("the event's id is not the hash of its content");
  if (!verify(null, u, key, Buffer.from(signature, "base64"))) fail("the event's signature does not verify");
  if (p.event.seq !== p.seq || p.event.node_did !== did) fail("the event is not this node's event at this seq");

  // 4. The leaf: SHA-256(0x00 ‖ the 32 bytes of the id), at index seq - 1.
  const leaf = sha256([0x00], Buffer.from(id, "hex"));
  if (p.leaf_hash !== undefined && p.leaf_hash !== leaf.toString("base64")) fail("leaf_hash is not the event's leaf");
  const index = BigInt(p.leaf_index);
  if (index !== BigInt(p.seq) - 1n || index >= size) fail("leaf_index is not seq - 1 within the tree");

  // 5. RFC 9162 §2.1.3.2: fold the path from the leaf up; it must end at the
  // root with every level used.
  let fn = index;
  let sn = size - 1n;
  let r = leaf;
  for (const p64 of p.proof) {
    const h = Buffer.from(p64, "base64");
    if (sn === 0n) fail("the proof is longer than the path");
    if ((fn & 1n) === 1n || fn === sn) {
      r = sha256([0x01], h, r);
      if ((fn & 1n) === 0n) {
        while ((fn & 1n) === 0n && fn !== 0n) {
          fn >>= 1n;
          sn >>= 1n;
        }
      }
    } else {
      r = sha256([0x01], r, h);
    }
    fn >>= 1n;
    sn >>= 1n;
  }
  if (sn !== 0n || !r.equals(root)) fail("the inclusion proof does not lead to the checkpoint's root");
  return { seq: p.seq, id, size, root: root64, name, did, cosigned };
}

function main(args) {
  const positional = [];
  const witnessKeys = [];
  let quorum = 1;
  while (args.length > 0) {
    const a = args.shift();
    if (a === "--witness") witnessKeys.push(args.shift() ?? fail("--witness needs a verifier key"));
    else if (a === "--quorum") quorum = Number(args.shift());
    else positional.push(a);
  }
  if (!Number.isInteger(quorum) || quorum < 1 || quorum > Math.max(witnessKeys.length, 1)) fail("--quorum must be from 1 to the number of --witness keys");
  const [file = "-", pinned] = positional;
  const p = JSON.parse(readFileSync(file === "-" ? 0 : file, "utf8"));
  const { seq, id, size, root, name } = checkInclusion(p, { verifierKey: pinned, witnessKeys, quorum });
  const witnessed = witnessKeys.length > 0 ? `, cosigned by ${quorum} of ${witnessKeys.length} witnesses` : "";
  console.log(`ok: seq ${seq} (event ${id}) is in the tree of ${size} events, root ${root}, signed by ${name}${witnessed}`);
}

// Run as a program, not when imported: "invalid: …" and exit 1 for a proof
// that does not check.
if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  try {
    main(process.argv.slice(2));
  } catch (e) {
    if (!(e instanceof InclusionError)) throw e;
    console.log(`invalid: ${e.message}`);
    process.exitCode = 1;
  }
}
