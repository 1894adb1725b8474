// This module is browser compatible.

/**
 * The network half of the remote catalog: fetching the listing and module
 * bytes, and verifying bytes against their digests before anyone may cache
 * or run them. Every failure becomes a `CordonError` whose message names
 * the pack.
 *
 * @module
 */

import {
  type CatalogListing,
  CatalogListingSchema,
  CordonError,
  type ErrorCode,
  isErrorCode,
} from "../protocol/mod.ts";
import { parseReprDigest, sha256Digest } from "./digest.ts";

/** The fetch function the remote catalog calls. */
export type FetchFunction = (
  input: string,
  init: RequestInit,
) => Promise<Response>;

/** Where a remote catalog sends its requests and with which headers. */
export interface Endpoint {
  /** The listing URL. */
  listingUrl: string;
  /** The URL modules live under, at `/<id>`. */
  moduleBase: string;
  /** Calls the network. */
  fetch: FetchFunction;
  /** Headers sent with every request (authorization, for example). */
  headers: Headers;
}

/** The module a fetch is for, as the listing names it. */
export interface ModuleTarget {
  /** The module's id. */
  id: string;
  /** The module's file inside its pack, such as `./index.js`. */
  path: string;
  /** The pack's name. */
  pack: string;
  /** The digest the listing gives for the module. */
  digest: string;
}

/** A module whose bytes matched every digest. */
export interface VerifiedModule {
  /** The module source. */
  source: string;
  /** Its digest, equal to the listing's, the header's and the bytes'. */
  digest: string;
  /** The response's entity tag, when it had one. */
  etag: string | undefined;
  /** The response's `X-Cordon-Graph-Digest`, when it had one. */
  graphDigest: string | undefined;
}

/** A fresh listing, or word that the one held is current. */
export type ListingAnswer =
  | { notModified: true }
  | { notModified: false; listing: CatalogListing; etag: string | undefined };

/** A module answer other than 200 or 304, with the server's problem code. */
export interface ServerRefusal {
  /** The HTTP status. */
  status: number;
  /** The problem document's stable code, when it had a registered one. */
  code: ErrorCode | undefined;
  /** The problem document's detail, when it had one. */
  detail: string | undefined;
}

/** Thrown inside this module when the server refused a module. */
export class RefusedError extends CordonError {
  /** What the server answered. */
  readonly refusal: ServerRefusal;

  /**
   * @param message The message naming the pack.
   * @param refusal What the server answered.
   */
  constructor(message: string, refusal: ServerRefusal) {
    super("FETCH_FAILED", message);
    this.refusal = refusal;
  }
}

const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

const FETCH_REMEDY = "check the server URL and that the server is running";
const DIGEST_REMEDY =
  "do not trust this server or proxy; the module was not cached or run";

/**
 * The abort error every cancelled catalog call rejects with.
 *
 * @param reason The signal's reason.
 * @returns The error.
 */
export function abortedError(reason: unknown): CordonError {
  return new CordonError(
    "ABORTED",
    "The catalog request was aborted by its caller",
    { cause: reason },
  );
}

function describeModule(target: ModuleTarget): string {
  return `module ${target.path} of pack "${target.pack}"`;
}

function networkDetail(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

async function readProblem(response: Response): Promise<ServerRefusal> {
  const refusal: ServerRefusal = {
    status: response.status,
    code: undefined,
    detail: undefined,
  };
  try {
    const type = response.headers.get("content-type") ?? "";
    if (!type.includes("json")) return refusal;
    const problem: unknown = await response.json();
    if (typeof problem !== "object" || problem === null) return refusal;
    const { code, detail } = problem as Record<string, unknown>;
    if (typeof code === "string" && isErrorCode(code)) refusal.code = code;
    if (typeof detail === "string") refusal.detail = detail.slice(0, 500);
  } catch {
    // An unreadable problem document leaves only the status.
  } finally {
    await response.body?.cancel().catch(() => {});
  }
  return refusal;
}

function describeRefusal(refusal: ServerRefusal): string {
  return refusal.code === undefined
    ? `the server answered ${refusal.status}`
    : `the server answered ${refusal.status} ${refusal.code}`;
}

async function send(
  endpoint: Endpoint,
  url: string,
  headers: Headers,
  signal: AbortSignal | undefined,
  what: string,
): Promise<Response> {
  if (signal?.aborted) throw abortedError(signal.reason);
  try {
    return await endpoint.fetch(url, {
      method: "GET",
      headers,
      signal,
    });
  } catch (error) {
    if (signal?.aborted) throw abortedError(signal.reason);
    throw new CordonError(
      "FETCH_FAILED",
      `Cannot fetch ${what} from ${url}: ${
        networkDetail(error)
      }; ${FETCH_REMEDY}`,
      { cause: error },
    );
  }
}

function headersWith(base: Headers, extra: Record<string, string>): Headers {
  const headers = new Headers(base);
  for (const [name, value] of Object.entries(extra)) headers.set(name, value);
  return headers;
}

/**
 * Fetches the catalog listing, revalidating with `If-None-Match` when an
 * entity tag is known.
 *
 * @param endpoint Where to ask.
 * @param etag The entity tag of the listing held, if any.
 * @param what What the listing is for, for messages: `the catalog listing
 * for pack "x"`.
 * @param signal Cancels the request.
 * @returns The listing, or word that the one held is current.
 * @throws {CordonError} `FETCH_FAILED` when the listing cannot be fetched or
 * does not match the schema; `ABORTED` when cancelled.
 */
export async function fetchListing(
  endpoint: Endpoint,
  etag: string | undefined,
  what: string,
  signal: AbortSignal | undefined,
): Promise<ListingAnswer> {
  const url = endpoint.listingUrl;
  const headers = headersWith(endpoint.headers, {
    accept: "application/json",
    ...(etag === undefined ? {} : { "if-none-match": etag }),
  });
  const response = await send(endpoint, url, headers, signal, what);
  if (response.status === 304 && etag !== undefined) {
    await response.body?.cancel();
    return { notModified: true };
  }
  if (response.status !== 200) {
    const refusal = await readProblem(response);
    throw new CordonError(
      "FETCH_FAILED",
      `Cannot fetch ${what} from ${url}: ${
        describeRefusal(refusal)
      }; ${FETCH_REMEDY}`,
    );
  }
  let body: unknown;
  try {
    body = await response.json();
  } catch (error) {
    if (signal?.aborted) throw abortedError(signal.reason);
    throw new CordonError(
      "FETCH_FAILED",
      `Cannot read ${what} from ${url}: the body is not JSON; ${FETCH_REMEDY}`,
      { cause: error },
    );
  }
  const parsed = CatalogListingSchema.safeParse(body);
  if (!parsed.success) {
    throw new CordonError(
      "FETCH_FAILED",
      `Cannot read ${what} from ${url}: it does not match the catalog listing schema; point the catalog at a cordon delivery server`,
      { cause: parsed.error },
    );
  }
  return {
    notModified: false,
    listing: parsed.data,
    etag: response.headers.get("etag") ?? undefined,
  };
}

/**
 * Checks bytes against the digest the listing gives and the one the
 * response announces, and decodes them.
 *
 * @param target The module, with the listing's digest.
 * @param bytes The body.
 * @param announced The response's `Repr-Digest` header.
 * @returns The source text.
 * @throws {CordonError} `DIGEST_MISMATCH` on any disagreement;
 * `FETCH_FAILED` when verified bytes are not UTF-8.
 */
export async function verifyBytes(
  target: ModuleTarget,
  bytes: Uint8Array<ArrayBuffer>,
  announced: string | null,
): Promise<string> {
  const refuse = (detail: string): CordonError =>
    new CordonError(
      "DIGEST_MISMATCH",
      `Refusing ${describeModule(target)}: ${detail}; ${DIGEST_REMEDY}`,
    );
  if (announced === null) {
    throw refuse("the response has no Repr-Digest header");
  }
  const header = parseReprDigest(announced);
  if (header === undefined) {
    throw refuse("its Repr-Digest header has no valid sha-256 member");
  }
  const actual = await sha256Digest(bytes);
  if (header !== target.digest) {
    throw refuse(
      `its Repr-Digest header announces ${header} but the catalog listing gives ${target.digest}`,
    );
  }
  if (actual !== target.digest) {
    throw refuse(
      `its bytes hash to ${actual} but the catalog listing gives ${target.digest}`,
    );
  }
  try {
    return decoder.decode(bytes);
  } catch (error) {
    throw new CordonError(
      "FETCH_FAILED",
      `Cannot use ${
        describeModule(target)
      }: its bytes are not UTF-8 text; fix the pack on the server`,
      { cause: error },
    );
  }
}

/**
 * Fetches one module and verifies it. A pinned fetch asks for the listed
 * digest (`?digest=`), which the server answers as immutable; a
 * conditional fetch sends `If-None-Match` and may get `undefined` back for
 * a 304.
 *
 * @param endpoint Where to ask.
 * @param target The module, with the listing's digest.
 * @param options `pinned` to ask for the listed digest, `etag` to
 * revalidate, `signal` to cancel.
 * @returns The verified module, or `undefined` for a 304.
 * @throws {CordonError} `FETCH_FAILED` (a {@linkcode RefusedError} when the
 * server refused), `DIGEST_MISMATCH`, or `ABORTED`.
 */
export async function fetchModule(
  endpoint: Endpoint,
  target: ModuleTarget,
  options: { pinned: boolean; etag?: string; signal?: AbortSignal },
): Promise<VerifiedModule | undefined> {
  const { pinned, etag, signal } = options;
  const base = `${endpoint.moduleBase}/${encodeURIComponent(target.id)}`;
  const url = pinned
    ? `${base}?digest=${encodeURIComponent(target.digest)}`
    : base;
  const headers = headersWith(endpoint.headers, {
    accept: "text/javascript",
    ...(etag === undefined ? {} : { "if-none-match": etag }),
  });
  const what = describeModule(target);
  const response = await send(endpoint, url, headers, signal, what);
  if (response.status === 304 && etag !== undefined) {
    await response.body?.cancel();
    return undefined;
  }
  if (response.status !== 200) {
    const refusal = await readProblem(response);
    throw new RefusedError(
      `Cannot fetch ${what} from ${url}: ${
        describeRefusal(refusal)
      }; ${FETCH_REMEDY}`,
      refusal,
    );
  }
  let bytes: Uint8Array<ArrayBuffer>;
  try {
    bytes = new Uint8Array(await response.arrayBuffer());
  } catch (error) {
    if (signal?.aborted) throw abortedError(signal.reason);
    throw new CordonError(
      "FETCH_FAILED",
      `Cannot read ${what} from ${url}: ${
        networkDetail(error)
      }; ${FETCH_REMEDY}`,
      { cause: error },
    );
  }
  const source = await verifyBytes(
    target,
    bytes,
    response.headers.get("repr-digest"),
  );
  return {
    source,
    digest: target.digest,
    etag: response.headers.get("etag") ?? undefined,
    graphDigest: response.headers.get("x-cordon-graph-digest") ?? undefined,
  };
}
