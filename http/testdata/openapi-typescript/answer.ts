// The type openapi-typescript generated for one answer: the application/json
// body of operation Op's response of status Status. TestOpenAPITypeScriptTypes
// (http/openapi_codegen_test.go) generates ./civnode.ts from the document a
// running node serves, and assigns that node's answers, as object literals,
// to Answer<"operationId", status>: tsc --strict then refuses a member the
// document does not declare, a missing required one, a mistyped value and a
// status the operation does not list.
import type { operations } from "./civnode";

export type Answer<Op extends keyof operations, Status extends keyof operations[Op]["responses"]> =
  operations[Op]["responses"][Status] extends { content: { "application/json": infer Body } } ? Body : never;
