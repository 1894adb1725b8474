// This module is browser compatible.

import { z } from "./_zod.ts";
import type { Schema } from "./schema.ts";

/**
 * The most headers an answer may set. The runtime's `Headers` takes time
 * that grows with the square of their count (20,000 took the host's thread
 * over 3 s), so a plugin could stall every other request with one answer;
 * {@linkcode SerializedResponseSchema} and its JSON Schema refuse more.
 *
 * @example
 * ```ts
 * import {
 *   MAX_RESPONSE_HEADERS,
 *   SerializedResponseSchema,
 * } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * const headers = Array.from(
 *   { length: MAX_RESPONSE_HEADERS + 1 },
 *   (_, i): [string, string] => [`x-${i}`, "1"],
 * );
 * assert.equal(SerializedResponseSchema.safeParse({ status: 200, headers }).success, false);
 * ```
 */
export const MAX_RESPONSE_HEADERS = 256;

/** A host request, as data a sandboxed plugin handler receives. */
export interface SerializedRequest {
  /** The full request URL. */
  url: string;
  /** The HTTP method, upper case. */
  method: string;
  /** Header pairs, names lower case, in order. */
  headers: [string, string][];
  /** The body as base64, or `null` when there is none. */
  bodyBase64: string | null;
  /** The authenticated principal id, or `null`. */
  principalId: string | null;
  /** The tenant id, or `null`. */
  tenantId: string | null;
  /** The capability names the plugin holds for this request. */
  capabilities: string[];
  /** Route parameters matched by the host. */
  params: Record<string, string>;
}

const serializedRequest: z.ZodType<SerializedRequest> = z
  .strictObject({
    url: z.string(),
    method: z.string(),
    headers: z.array(z.tuple([z.string(), z.string()])),
    bodyBase64: z.string().nullable(),
    principalId: z.string().nullable(),
    tenantId: z.string().nullable(),
    capabilities: z.array(z.string()),
    params: z.record(z.string(), z.string()),
  });

/**
 * A host request as data: every bridge sends this to sandboxed handlers.
 *
 * @example
 * ```ts
 * import { SerializedRequestSchema } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * const request = SerializedRequestSchema.parse({
 *   url: "http://127.0.0.1/hello", method: "GET", headers: [],
 *   bodyBase64: null, principalId: "u1", tenantId: "t1",
 *   capabilities: [], params: {},
 * });
 * assert.equal(request.principalId, "u1");
 * ```
 */
export const SerializedRequestSchema: Schema<SerializedRequest> =
  serializedRequest;

/** A sandboxed handler's answer, as data. */
export interface SerializedResponse {
  /** The HTTP status, 200 to 599. */
  status: number;
  /** Header pairs. */
  headers: [string, string][];
  /** The body as text, or `null`. Exclusive with `bodyBase64`. */
  body?: string | null;
  /** The body as base64, for bytes. Exclusive with `body`. */
  bodyBase64?: string | null;
}

const serializedResponse: z.ZodType<SerializedResponse> = z
  .strictObject({
    status: z.number().int().min(200).max(599),
    headers: z.array(z.tuple([z.string(), z.string()]))
      .max(MAX_RESPONSE_HEADERS).default([]),
    body: z.string().nullable().optional(),
    bodyBase64: z.string().nullable().optional(),
  }).refine(
    (r) => r.body == null || r.bodyBase64 == null,
    "A response has body or bodyBase64, not both",
  ).meta({
    // A refinement does not reach the JSON Schema, so the same rule is also
    // written in its keywords for clients that validate with that.
    not: {
      required: ["body", "bodyBase64"],
      properties: { body: { type: "string" }, bodyBase64: { type: "string" } },
    },
  });

/**
 * A sandboxed handler's answer: status, headers, and a text or base64 body.
 *
 * @example
 * ```ts
 * import { SerializedResponseSchema } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * const response = SerializedResponseSchema.parse({
 *   status: 200, headers: [["content-type", "text/plain"]], body: "hi",
 * });
 * assert.equal(response.status, 200);
 * ```
 */
export const SerializedResponseSchema: Schema<SerializedResponse> =
  serializedResponse;
