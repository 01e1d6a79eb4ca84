// Validates an OpenAPI document, run by TestOpenAPIValidates
// (http/openapi_test.go) on the document civnode serves at
// GET /v1/openapi.json, and on broken copies of it to prove each check can
// fail.
//
// Two checks, both by code this project did not write:
//  1. @seriousme/openapi-schema-validator checks the document against the
//     official OpenAPI 3.1 schema (unknown members are refused everywhere) and
//     that every $ref resolves. That schema does not look inside Schema
//     Objects.
//  2. So every Schema Object is then compiled by Ajv as JSON Schema 2020-12 in
//     strict mode: an unknown keyword, a `required` member missing from
//     `properties`, an unknown `format` or a malformed pattern fails. The
//     OpenAPI dialect's own keywords (example, discriminator, xml,
//     externalDocs) are known to it.
//
// Usage: node validate.mjs FILE. Exit 0 and a one-line summary when valid;
// exit 1 with the errors as JSON on stderr when not; exit 2 on a usage error.
import { readFile } from "node:fs/promises";
import { Validator } from "@seriousme/openapi-schema-validator";
import Ajv2020 from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";

const { default: addFormats } = addFormatsModule;

const file = process.argv[2];
if (!file) {
  console.error("usage: node validate.mjs FILE");
  process.exit(2);
}

function fail(stage, errors) {
  console.error(JSON.stringify({ stage, errors }, null, 2));
  process.exit(1);
}

const text = await readFile(file, "utf8");
let doc;
try {
  doc = JSON.parse(text);
} catch (err) {
  fail("json", String(err));
}

const validator = new Validator();
const res = await validator.validate(structuredClone(doc));
if (!res.valid) {
  fail("openapi-schema", res.errors);
}
if (validator.version !== "3.1") {
  fail("openapi-schema", `validated as OpenAPI ${validator.version}, want 3.1`);
}

// Every place a Schema Object may stand in the documents civnode writes.
function* schemas(d) {
  const c = d.components ?? {};
  for (const [name, s] of Object.entries(c.schemas ?? {})) yield [`components.schemas.${name}`, s];
  for (const [name, p] of Object.entries(c.parameters ?? {})) if (p.schema) yield [`components.parameters.${name}`, p.schema];
  for (const [name, h] of Object.entries(c.headers ?? {})) if (h.schema) yield [`components.headers.${name}`, h.schema];
  const content = function* (where, media) {
    for (const [type, m] of Object.entries(media ?? {})) if (m.schema) yield [`${where} ${type}`, m.schema];
  };
  for (const [name, b] of Object.entries(c.requestBodies ?? {})) yield* content(`components.requestBodies.${name}`, b.content);
  for (const [name, r] of Object.entries(c.responses ?? {})) {
    yield* content(`components.responses.${name}`, r.content);
    for (const [h, hd] of Object.entries(r.headers ?? {})) if (hd.schema) yield [`components.responses.${name} header ${h}`, hd.schema];
  }
  for (const [path, item] of Object.entries(d.paths ?? {})) {
    for (const p of item.parameters ?? []) if (p.schema) yield [`${path} parameter ${p.name}`, p.schema];
    for (const [method, op] of Object.entries(item)) {
      if (typeof op !== "object" || Array.isArray(op) || !op.responses) continue;
      const where = `${method.toUpperCase()} ${path}`;
      for (const p of op.parameters ?? []) if (p.schema) yield [`${where} parameter ${p.name}`, p.schema];
      yield* content(`${where} request`, op.requestBody?.content);
      for (const [status, r] of Object.entries(op.responses)) {
        yield* content(`${where} ${status}`, r.content);
        for (const [h, hd] of Object.entries(r.headers ?? {})) if (hd.schema) yield [`${where} ${status} header ${h}`, hd.schema];
      }
    }
  }
}

const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
addFormats(ajv);
ajv.addVocabulary(["example", "discriminator", "xml", "externalDocs"]);
// The component schemas become the $defs of one registered schema, and every
// $ref to #/components/schemas/NAME is pointed at them, so a reference
// resolves to the same schema as in OpenAPI.
const defs = "civnode:components";
const rebase = (v) => {
  if (Array.isArray(v)) return v.map(rebase);
  if (v === null || typeof v !== "object") return v;
  const out = {};
  for (const [k, x] of Object.entries(v)) {
    out[k] = k === "$ref" && typeof x === "string" ? x.replace(/^#\/components\/schemas\//, `${defs}#/$defs/`) : rebase(x);
  }
  return out;
};
ajv.addSchema({ $id: defs, $defs: rebase(doc.components?.schemas ?? {}) });
const errors = [];
let count = 0;
for (const [where, s] of schemas(doc)) {
  count++;
  const own = where.startsWith("components.schemas.") ? { $ref: `${defs}#/$defs/${where.slice("components.schemas.".length)}` } : rebase(s);
  try {
    ajv.compile(own);
  } catch (err) {
    errors.push(`${where}: ${err.message}`);
  }
}
if (errors.length > 0) {
  fail("json-schema", errors);
}

let operations = 0;
for (const item of Object.values(doc.paths)) {
  for (const method of ["get", "put", "post", "delete", "options", "head", "patch", "trace"]) {
    if (item[method]) operations++;
  }
}
console.log(`valid: OpenAPI ${validator.specificationVersion}, ${Object.keys(doc.paths).length} paths, ${operations} operations, ${count} schemas compiled`);
