/**
 * Problem documents (RFC 9457) for delivery errors. Every detail is a fixed
 * text chosen by code, never built from the request or from the catalog's
 * messages, so no id, path or server-side name can reach a client through
 * an error. Responses are built once per kind and cloned per request.
 *
 * @module
 */

import {
  type ErrorCode,
  PROBLEM_CONTENT_TYPE,
  problemDocument,
} from "../protocol/mod.ts";
import { ALLOWED_METHODS, CORS_HEADERS } from "./_cors.ts";

/**
 * The `Retry-After` (RFC 9110 §10.2.3) of every 503, in seconds: a catalog
 * or hook that failed, or a file that changed before the rescan, is a
 * passing state, and a client told when to come back does not retry in a
 * tight loop against a server already in trouble.
 */
export const RETRY_AFTER_SECONDS = 5;

/** One kind of delivery error: its status, code and fixed detail. */
export interface ProblemKind {
  /** The HTTP status. */
  readonly status: number;
  /** The stable error code. */
  readonly code: ErrorCode;
  /** What happened and what to do next. */
  readonly detail: string;
}

function kind(status: number, code: ErrorCode, detail: string): ProblemKind {
  return Object.freeze({ status, code, detail });
}

/** Every error the delivery handler answers. */
export const PROBLEMS = Object.freeze(
  {
    requestInvalid: kind(
      400,
      "REQUEST_INVALID",
      "The request cannot be routed: its Host header is not host[:port]; send the Host of the server's URL",
    ),
    routeNotFound: kind(
      404,
      "MODULE_NOT_FOUND",
      "Nothing is served at this path: fetch modules by the ids the catalog listing gives",
    ),
    idInvalid: kind(
      404,
      "MODULE_ID_INVALID",
      "The module id is malformed: use an id exactly as the catalog listing gives it",
    ),
    notFound: kind(
      404,
      "MODULE_NOT_FOUND",
      "No installed module has this id: list the catalog again; the pack may have been upgraded or removed",
    ),
    versionGone: kind(
      404,
      "MODULE_NOT_FOUND",
      "This version of the module is no longer installed: list the catalog again",
    ),
    forbidden: kind(
      403,
      "DELIVERY_FORBIDDEN",
      "The entitlement policy refused this module to this requester: ask for the pack to be granted, or declare another pack",
    ),
    unavailable: kind(
      503,
      "DELIVERY_UNAVAILABLE",
      "The module cannot be delivered right now: retry later",
    ),
    fileChanged: kind(
      503,
      "PACK_FILE_CHANGED",
      "The module's file changed on disk since the catalog listed it: list the catalog again once the server has rescanned its packs",
    ),
    listingQueryInvalid: kind(
      400,
      "LISTING_QUERY_INVALID",
      "The packs parameter is malformed: pass packs=name,name with 1 to 64 pack names",
    ),
    methodNotAllowed: kind(
      405,
      "METHOD_NOT_ALLOWED",
      "This method is not supported here: use GET or HEAD",
    ),
    preconditionFailed: kind(
      412,
      "PRECONDITION_FAILED",
      "The If-Match header names no entity tag this resource has now: fetch it again without If-Match",
    ),
  } as const,
);

/** Builds and caches one response template per problem kind and method. */
export class ProblemResponses {
  #templates = new Map<ProblemKind, [get: Response, head: Response]>();

  /**
   * Answers a problem.
   *
   * @param problem The kind of problem.
   * @param head Whether the request was `HEAD` (no body).
   * @returns A fresh response the caller owns.
   */
  respond(problem: ProblemKind, head: boolean): Response {
    let pair = this.#templates.get(problem);
    if (pair === undefined) {
      pair = build(problem);
      this.#templates.set(problem, pair);
    }
    return pair[head ? 1 : 0].clone();
  }
}

function build(problem: ProblemKind): [Response, Response] {
  const document = problemDocument(
    problem.code,
    problem.status,
    problem.detail,
  );
  const bytes = new TextEncoder().encode(JSON.stringify(document));
  const headers: [string, string][] = [
    ["content-type", PROBLEM_CONTENT_TYPE],
    ["content-length", String(bytes.byteLength)],
    ["cache-control", "no-store"],
    ["x-content-type-options", "nosniff"],
    ...CORS_HEADERS.map(([k, v]): [string, string] => [k, v]),
  ];
  if (problem.status === 405) headers.push(["allow", ALLOWED_METHODS]);
  if (problem.status === 503) {
    headers.push(["retry-after", String(RETRY_AFTER_SECONDS)]);
  }
  const init = { status: problem.status, headers };
  return [new Response(bytes, init), new Response(null, init)];
}
