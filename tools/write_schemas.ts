/**
 * Writes a JSON Schema (draft 2020-12) for every wire shape into `schemas/`,
 * so clients in other languages validate the same shapes. With `--check` it
 * writes nothing and exits 1 when a committed schema is out of date.
 *
 * Usage: `deno task schemas [--check]`
 *
 * @module
 */

import { z } from "zod";
import * as protocol from "../protocol/mod.ts";

/**
 * Each published schema's zod schema, by its file's base name. Every
 * protocol schema is a zod schema at run time; its public type hides that.
 */
export const SCHEMAS: Record<string, protocol.Schema<unknown>> = {
  module_id: protocol.ModuleIdSchema,
  digest: protocol.DigestSchema,
  pack_manifest: protocol.PackManifestSchema,
  declaration: protocol.DeclarationSchema,
  authorized_delivery: protocol.AuthorizedDeliverySchema,
  delivery_refusal: protocol.DeliveryRefusalSchema,
  catalog_listing: protocol.CatalogListingSchema,
  staged_index: protocol.StagedIndexSchema,
  staged_pack: protocol.StagedPackSchema,
  discovery_index_header: protocol.DiscoveryIndexHeaderSchema,
  discovery_index_pack: protocol.DiscoveryIndexPackSchema,
  pack_diagnostic: protocol.PackDiagnosticSchema,
  problem: protocol.ProblemSchema,
  sandbox_result: protocol.SandboxResultSchema,
  serialized_request: protocol.SerializedRequestSchema,
  serialized_response: protocol.SerializedResponseSchema,
};

/** The `not` that refuses a newline at the end of a string. */
const FINAL_NEWLINE = Object.freeze({ pattern: "\\n$" });

/**
 * Makes an anchored `pattern` mean in Python what it means in ECMA-262, the
 * dialect JSON Schema names: Python's `re`, which its JSON Schema
 * validators use, lets `$` match before a final newline, so there
 * `^[a-z]+$` accepts `"abc\n"`. No value a pattern of cordon's accepts holds
 * a newline, so the schema also refuses one at the end, in words every
 * regular expression engine reads alike (Go's RE2 has no lookahead).
 */
function refuseFinalNewline(node: { pattern?: unknown; not?: unknown }): void {
  if (typeof node.pattern !== "string" || !node.pattern.endsWith("$")) return;
  // A schema used in several places is visited once for each.
  if (JSON.stringify(node.not) === JSON.stringify(FINAL_NEWLINE)) return;
  if (node.not !== undefined) {
    throw new Error(
      `a schema with a pattern has a not of its own: ${node.pattern}`,
    );
  }
  node.not = { ...FINAL_NEWLINE };
}

/**
 * Says in bounds that a number is finite, as every zod number is: JSON
 * text can hold `1e400` or a 400-digit integer, which `JSON.parse` reads
 * as `Infinity` and zod refuses, while Python's `json` reads them as `inf`
 * and as an exact integer, which its jsonschema takes for numbers unless a
 * bound says otherwise. A bound zod already wrote is kept.
 */
function boundNumber(node: Record<string, unknown>): void {
  const { type } = node;
  const isNumber = type === "number" ||
    (Array.isArray(type) && type.includes("number"));
  if (!isNumber || node.const !== undefined) return;
  if (node.minimum === undefined && node.exclusiveMinimum === undefined) {
    node.minimum = -Number.MAX_VALUE;
  }
  if (node.maximum === undefined && node.exclusiveMaximum === undefined) {
    node.maximum = Number.MAX_VALUE;
  }
}

/** Renders every schema as formatted JSON text, keyed by file name. */
export function renderSchemas(): Record<string, string> {
  const files: Record<string, string> = {};
  for (const [name, schema] of Object.entries(SCHEMAS)) {
    const json = z.toJSONSchema(schema as unknown as z.ZodType, {
      io: "input",
      override: ({ jsonSchema }) => {
        refuseFinalNewline(jsonSchema);
        boundNumber(jsonSchema);
      },
    });
    files[`${name}.json`] = JSON.stringify(
      { $id: `urn:cordon:schema:${name}`, ...json },
      null,
      2,
    ) + "\n";
  }
  return files;
}

if (import.meta.main) {
  const dir = new URL("../schemas/", import.meta.url);
  const check = Deno.args.includes("--check");
  let stale = 0;
  await Deno.mkdir(dir, { recursive: true });
  for (const [file, text] of Object.entries(renderSchemas())) {
    const url = new URL(file, dir);
    if (check) {
      const current = await Deno.readTextFile(url).catch(() => "");
      if (current !== text) {
        console.error(`schemas/${file} is out of date: run deno task schemas`);
        stale++;
      }
    } else {
      await Deno.writeTextFile(url, text);
      console.log(`wrote schemas/${file}`);
    }
  }
  Deno.exit(stale === 0 ? 0 : 1);
}
