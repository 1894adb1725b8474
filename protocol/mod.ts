// This module is browser compatible.

/**
 * Wire shapes and error codes shared by every cordon module: zod schemas
 * for module ids, digests, pack manifests, declarations, deliveries and
 * refusals, sandbox results and bridge messages; the one error-code
 * registry, `CordonError`, problem+json, the header rules (hop-by-hop
 * fields, field names), and the small helpers the other folders share
 * (options, bounded maps in order of use).
 *
 * ```ts
 * import { DeclarationSchema, ERROR_CODES } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * const declaration = DeclarationSchema.parse({ source: "export default 1;" });
 * assert.deepEqual(declaration.packages, []);
 * assert.ok(ERROR_CODES.TIMEOUT.remedy);
 * ```
 *
 * @module
 */

export * from "./error_codes.ts";
export * from "./schema.ts";
export * from "./cordon_error.ts";
export * from "./ids.ts";
export * from "./id_schemas.ts";
export * from "./pack_manifest.ts";
export * from "./declaration.ts";
export * from "./read_declaration.ts";
export * from "./delivery.ts";
export * from "./problem.ts";
export * from "./sandbox_result.ts";
export * from "./log_levels.ts";
export * from "./read_sandbox_result.ts";
export * from "./bridge_messages.ts";
export * from "./hop_by_hop.ts";
export * from "./host_header.ts";
export * from "./operator_text.ts";
export * from "./run_result.ts";
export * from "./options.ts";
export * from "./recent.ts";
export * from "./context_json.ts";
export * from "./run_inputs.ts";
export * from "./nesting.ts";
export * from "./staged_index.ts";
export * from "./discovery_index.ts";
