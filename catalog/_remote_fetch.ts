// This module is browser compatible.

/**
 * The network half of the remote catalog: fetching the listing and module
 * bytes, and verifying bytes against their digests before anyone may cache
 * or run them. Every request ends by its deadline and every body is read
 * up to its cap, so a server that stalls, drips or floods costs bounded
 * time and memory. Every failure becomes a `CordonError` whose message
 * names the pack.
 *
 * @module
 */

import { operatorText } from "../protocol/operator_text.ts";
import { withOfflineNote } from "../protocol/network_status.ts";
import {
  type CatalogListing,
  CatalogListingSchema,
  CordonError,
  type ErrorCode,
  isErrorCode,
  messageOf,
  type Schema,
} from "../protocol/mod.ts";
import { parseReprDigest, sha256Digest } from "./digest.ts";
import { readBounded, UnreadableBody } from "./_bounded.ts";
import {
  relayAbortToFetch,
  settleUnlessAborted,
} from "../protocol/deadline.ts";
import { RequestSlots } from "./_request_slots.ts";
import { parseUntrusted } from "./_schema_parse.ts";
import { decodeUtf8 } from "./_utf8.ts";

/** The fetch function the remote catalog calls. */
export type FetchFunction = (
  input: string,
  init: RequestInit,
) => Promise<Response>;

/**
 * Headers a catalog sends with every request, in any form the `Headers`
 * constructor takes: a `Headers`, name and value pairs, or a record.
 * Written out rather than named `HeadersInit`, which the DOM library
 * declares and Node's own types do not, so the declarations type-check in a
 * Node project without the DOM library.
 *
 * @example
 * ```ts
 * import type { CatalogHeaders } from "@cordon/cordon/catalog";
 *
 * const headers: CatalogHeaders = { Authorization: "Bearer token-of-t1" };
 * ```
 */
export type CatalogHeaders =
  | Headers
  | Iterable<string[]>
  | Record<string, string>;

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
  /** How long one request may take, headers and whole body, in ms. */
  fetchTimeoutMs: number;
  /** The longest listing body read, in bytes. */
  maxListingBytes: number;
  /** The longest module body read, in bytes. */
  maxModuleBytes: number;
  /** Bounds the requests in flight at once; each waits for a slot. */
  slots: RequestSlots;
}

/** How many requests of one catalog may be in flight, and how many wait. */
export interface SlotBounds {
  /** Requests in flight at once. */
  maxConcurrentFetches: number;
  /** Requests that may wait for one of those. */
  maxQueued: number;
}

/**
 * An endpoint of one catalog: where it sends requests, with what, within
 * which bounds, and request slots of its own.
 *
 * @param urls The listing URL and the URL modules live under.
 * @param fetch What calls the network.
 * @param headers Sent with every request.
 * @param bounds The read bounds and the deadline of each request, and
 * how many requests may be in flight and wait.
 * @returns The endpoint.
 */
export function endpointOf(
  urls: Pick<Endpoint, "listingUrl" | "moduleBase">,
  fetch: FetchFunction,
  headers: Headers,
  bounds:
    & Pick<Endpoint, "fetchTimeoutMs" | "maxListingBytes" | "maxModuleBytes">
    & SlotBounds,
): Endpoint {
  const { maxConcurrentFetches, maxQueued, ...requestBounds } = bounds;
  return {
    ...urls,
    fetch,
    headers,
    ...requestBounds,
    slots: new RequestSlots(maxConcurrentFetches, maxQueued),
  };
}

/**
 * Refuses a catalog address that holds a user name or password: every
 * failure message names the address (so would every run result), and
 * browsers and Node refuse such a fetch anyway. Credentials go in
 * `headers`.
 *
 * @param url The address given.
 * @param what What was being done: `"Cannot create a remote catalog"`.
 * @param option The option's name: `"baseUrl"`.
 */
export function refuseUrlCredentials(
  url: URL,
  what: string,
  option: string,
): void {
  if (url.username !== "" || url.password !== "") {
    throw new TypeError(
      `${what}: ${option} must not hold a user name or password: pass credentials in headers, such as { Authorization: "Basic ..." }`,
    );
  }
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

/**
 * The most bytes of a problem+json error body read: enough for any problem
 * document cordon writes; a longer one is dropped and only its status kept.
 */
const MAX_PROBLEM_BYTES = 16 * 1024;

const FETCH_REMEDY = "check the server URL and that the server is running";
/**
 * A pinned URL answered 404 `MODULE_NOT_FOUND`: the listing named a
 * version the server no longer has. A run again lists afresh, unless a
 * cache in front keeps serving the old listing.
 */
const STALE_LISTING_REMEDY =
  "the server no longer has the version the catalog listing gives: the listing is stale, as a pack changed after it was fetched or a cache in front of the server keeps the listing although it answers Cache-Control: no-cache; run again, and if this persists, make that cache revalidate the listing";
/**
 * Statuses a proxy or gateway answers for a server behind it that is down
 * or slow. The delivery handler's own 503 carries a problem code.
 */
const GATEWAY_STATUSES: ReadonlySet<number> = new Set([502, 503, 504]);
/**
 * The delivery server's own refusals of a moment: a pack changed while it
 * was read (before the server re-scanned), or its catalog failed. The
 * server runs, so its URL is not at fault.
 */
const MOMENTARY_CODES: ReadonlySet<string> = new Set([
  "PACK_FILE_CHANGED",
  "DELIVERY_UNAVAILABLE",
]);
const MOMENTARY_REMEDY =
  "the server could not deliver it at that moment (a pack changed while the server read it, or its catalog failed); run again, and if this persists, see the delivery server's log";
const GATEWAY_REMEDY =
  "a proxy or gateway answered, as it could not reach the server behind it or did not get its answer in time; check that the delivery server is running, and the proxy's upstream address and timeouts";
/**
 * Deno's fetch reads `file:` URLs; Node's and browsers' refuse them, with
 * a message that names no cause ("fetch failed").
 */
const FILE_FETCH_REMEDY =
  "check that the file exists and is readable (Deno: --allow-read); where fetch cannot read file: URLs (Node, browsers), serve the staged tree over http(s) or pass a fetch that reads files";
/**
 * A browser tells a page nothing of why a request to another origin
 * failed: a server that is down and one whose answers lack CORS headers
 * both give "Failed to fetch".
 */
const CROSS_ORIGIN_FETCH_REMEDY =
  "check the server URL, that the server is running and, as it is on another origin than this page, that it answers CORS requests (the delivery handler does; a proxy in front of it may not)";
/**
 * How a digest refusal of a module or pack ends: its bytes were not kept
 * and, unless the refusal names what a misconfigured host did instead
 * (`distrust` false), the sender is not to be trusted.
 *
 * @param what What was refused.
 * @param distrust Whether to tell the reader to distrust the sender.
 * @returns The refusal's last words.
 */
export function refusalEnding(
  what: "module" | "pack",
  distrust: boolean,
): string {
  const kept = `the ${what} was not cached or run`;
  return distrust ? `do not trust this server or proxy; ${kept}` : kept;
}

/**
 * Bytes that hash to another digest than they should, as a refusal's
 * detail: the mismatch and, when the bytes show it, what they are instead
 * ({@linkcode misservedBody}), which names a misconfigured host.
 *
 * @param bytes The bytes that failed.
 * @param mismatch The two digests, in words.
 * @returns The detail, and whether it names a misconfigured host.
 */
export function mismatchDetail(
  bytes: Uint8Array,
  mismatch: string,
): { detail: string; misserved: boolean } {
  const instead = misservedBody(bytes, "they are");
  return instead === undefined
    ? { detail: mismatch, misserved: false }
    : { detail: `${mismatch}, and ${instead}`, misserved: true };
}
/**
 * A browser shows a page only the headers a response of another origin
 * exposes: without `Access-Control-Expose-Headers`, a missing
 * `Repr-Digest` is one the page may not read, not one the server left out.
 */
const UNEXPOSED_REMEDY =
  "it came from another origin, whose answers show a page only the headers their Access-Control-Expose-Headers names (the delivery handler sends *; a proxy or CDN in front of it may drop it); have the server expose Repr-Digest";

/**
 * What bytes that failed their check are instead, where they show it, and
 * what to do: gzip data (it begins 1f 8b, as no UTF-8 text does) is a file
 * a host compressed without saying so in `Content-Encoding`, so nothing
 * inflated it (files compressed ahead of time and uploaded to a bucket
 * without that header are served so); markup (it begins `<`, as no module
 * or JSON does) is a page a host answers in place of the file, such as a
 * static host's fallback for a path it has no file at. Either is a
 * misconfigured host more often than a hostile one.
 *
 * @param bytes The body that failed.
 * @param subject What to call it: `they are`, `it is` or `the body is`.
 * @returns The explanation and what to do, or `undefined` for other bytes.
 */
function misservedBody(
  bytes: Uint8Array,
  subject: "they are" | "it is" | "the body is",
): string | undefined {
  const [begins, them] = subject === "they are"
    ? ["they begin", "them"]
    : ["it begins", "it"];
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) {
    return `${subject} gzip data (${begins} 1f 8b) the host sent without Content-Encoding: gzip, so nothing inflated ${them}; serve the file uncompressed, or with that header (a file compressed ahead of time needs it)`;
  }
  if (bytes[firstNonSpace(bytes)] === 0x3c) {
    return `${subject} an HTML page (${begins} <), such as a host answers for a path it has no file at, or a login or error page; check the URL, and that the file is there`;
  }
  return undefined;
}

/** The index of the first byte that is not ASCII white space or a byte order mark's. */
function firstNonSpace(bytes: Uint8Array): number {
  const skipped = new Set([0x20, 0x09, 0x0a, 0x0d, 0xef, 0xbb, 0xbf]);
  let index = 0;
  while (index < bytes.length && skipped.has(bytes[index]!)) index++;
  return index;
}

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
  return `module ${operatorText(target.path)} of pack "${target.pack}"`;
}

function networkDetail(error: unknown): string {
  // A fetch option of the platform's may throw anything, even a value
  // whose every read throws.
  return operatorText(messageOf(error), 200);
}

/** Whether `url` is on another origin than the page or worker that runs this, if any. */
function isOtherOrigin(url: string): boolean {
  const { location } = globalThis as { location?: { origin?: unknown } };
  const origin = location?.origin;
  return typeof origin === "string" && origin !== new URL(url).origin;
}

/**
 * Whether this runtime enforces a Content-Security-Policy, as browsers do
 * in pages and workers (Deno and Node do not).
 */
function enforcesContentSecurityPolicy(): boolean {
  const { SecurityPolicyViolationEvent } = globalThis as {
    SecurityPolicyViolationEvent?: unknown;
  };
  return typeof SecurityPolicyViolationEvent === "function";
}

/**
 * The connect-src check of a request that failed without an answer: a
 * browser refuses a request the page's policy forbids with the same bare
 * "Failed to fetch" as a server that is down.
 */
function connectSrcRemedy(url: string, otherOrigin: boolean): string {
  const add = otherOrigin
    ? `${new URL(url).origin} to connect-src`
    : "'self' to connect-src, and the origin a redirect leads to";
  return `, and that this page's Content-Security-Policy lets it connect there (add ${add})`;
}

/**
 * A request to the page's own origin that a redirect sends to another one
 * becomes cross-origin there: a browser then gives the same bare "Failed
 * to fetch" when that origin answers without CORS.
 */
const REDIRECT_CORS_REMEDY =
  ", that a redirect it answers with, if any, leads to a server that answers CORS requests (a redirect to another origin makes the request cross-origin)";

/**
 * What to check when a request failed without an answer: first, that the
 * browser is offline, where it says so.
 */
function fetchRemedy(url: string): string {
  if (url.startsWith("file:")) return FILE_FETCH_REMEDY;
  return withOfflineNote(networkRemedy(url));
}

/** The causes a request over the network failed without an answer. */
function networkRemedy(url: string): string {
  const otherOrigin = isOtherOrigin(url);
  if (!enforcesContentSecurityPolicy()) {
    return otherOrigin ? CROSS_ORIGIN_FETCH_REMEDY : FETCH_REMEDY;
  }
  const remedy = otherOrigin
    ? CROSS_ORIGIN_FETCH_REMEDY
    : FETCH_REMEDY + REDIRECT_CORS_REMEDY;
  return remedy + connectSrcRemedy(url, otherOrigin);
}

/** One request: where it goes, what it is for, and what ends it. */
interface Call {
  url: string;
  /** What the request is for, for messages: `module ./x.js of pack "p"`. */
  what: string;
  /** The caller's signal, to tell an abort from the deadline. */
  caller: AbortSignal | undefined;
  /** Aborts at the caller's abort or at the deadline, whichever is first. */
  signal: AbortSignal;
  /**
   * The signal the fetch is given: it aborts with `signal`, but never with
   * the caller's reason ({@linkcode relayAbortToFetch} says why).
   */
  fetchSignal: AbortSignal;
  /** Stops relaying the caller's abort to `fetchSignal`: the call is over. */
  end: () => void;
  timeoutMs: number;
}

function startCall(
  endpoint: Endpoint,
  url: string,
  what: string,
  caller: AbortSignal | undefined,
): Call {
  if (caller?.aborted) throw abortedError(caller.reason);
  const timeoutMs = endpoint.fetchTimeoutMs;
  const deadline = AbortSignal.timeout(timeoutMs);
  if (caller === undefined) {
    const end = () => {};
    return {
      url,
      what,
      caller,
      signal: deadline,
      fetchSignal: deadline,
      end,
      timeoutMs,
    };
  }
  const relay = new AbortController();
  return {
    url,
    what,
    caller,
    signal: AbortSignal.any([caller, deadline]),
    fetchSignal: AbortSignal.any([relay.signal, deadline]),
    end: relayAbortToFetch(caller, relay, what),
    timeoutMs,
  };
}

/**
 * Runs `request` once one of the endpoint's request slots is free, and
 * gives the slot back when it settles: the request's deadline starts only
 * when it is sent.
 *
 * @param what What the request fetches, for the refusal's message.
 * @throws {CordonError} `ABORTED` when `caller` aborts while it waits;
 * `CATALOG_BUSY` at once when as many requests wait as `maxQueued` allows.
 */
async function withSlot<T>(
  endpoint: Endpoint,
  what: string,
  caller: AbortSignal | undefined,
  request: () => Promise<T>,
): Promise<T> {
  let release: (() => void) | null;
  try {
    release = await endpoint.slots.take(caller);
  } catch {
    throw abortedError(caller?.reason);
  }
  if (release === null) throw busyError(endpoint.slots, what);
  try {
    return await request();
  } finally {
    release();
  }
}

/**
 * The refusal of a request turned away before it waited: nothing was sent,
 * so the same prefetch may be tried again once others finish.
 */
function busyError(slots: RequestSlots, what: string): CordonError {
  return new CordonError(
    "CATALOG_BUSY",
    `Cannot fetch ${what}: the catalog has as many requests waiting for one of its ${slots.size} fetch slots as its maxQueued allows (${slots.maxQueued}): retry once requests finish, or raise maxQueued`,
  );
}

/**
 * Whether a fetch failed on its body's chunks, asked without letting what
 * the fetch option threw (a proxy whose every trap throws) throw again.
 */
function isUnreadableBody(error: unknown): boolean {
  try {
    return error instanceof UnreadableBody;
  } catch {
    return false;
  }
}

/** What a call that threw rejects with: the abort, the deadline or the network. */
function callFailure(call: Call, error: unknown): CordonError {
  if (call.caller?.aborted) return abortedError(call.caller.reason);
  if (isUnreadableBody(error)) {
    return new CordonError(
      "FETCH_FAILED",
      `Cannot fetch ${call.what} from ${call.url}: the fetch option's body gave a chunk that is no Uint8Array, or one whose buffer was transferred before the body was read in full; make the fetch option answer a Response whose body gives bytes it leaves alone`,
      { cause: error },
    );
  }
  const detail = call.signal.aborted
    ? `the server did not answer in full within fetchTimeoutMs (${call.timeoutMs} ms); check that the server is running and not overloaded, or raise fetchTimeoutMs`
    : `${networkDetail(error)}; ${fetchRemedy(call.url)}`;
  return new CordonError(
    "FETCH_FAILED",
    `Cannot fetch ${call.what} from ${call.url}: ${detail}`,
    { cause: error },
  );
}

/** Reads a body up to `maxBytes`; abandons a longer one. */
async function readBody(
  call: Call,
  response: Response,
  maxBytes: number,
  tooLarge: string,
): Promise<Uint8Array<ArrayBuffer>> {
  let bytes: Uint8Array<ArrayBuffer> | null;
  try {
    bytes = await readBounded(response, maxBytes, { signal: call.signal });
  } catch (error) {
    throw callFailure(call, error);
  }
  if (bytes === null) {
    throw new CordonError(
      "FETCH_FAILED",
      `Cannot fetch ${call.what} from ${call.url}: ${tooLarge}`,
    );
  }
  return bytes;
}

async function readProblem(
  call: Call,
  response: Response,
): Promise<ServerRefusal> {
  const refusal: ServerRefusal = {
    status: response.status,
    code: undefined,
    detail: undefined,
  };
  const type = response.headers.get("content-type") ?? "";
  if (!type.includes("json")) {
    await response.body?.cancel().catch(() => {});
    return refusal;
  }
  let problem: unknown;
  try {
    const bytes = await readBounded(response, MAX_PROBLEM_BYTES, {
      signal: call.signal,
    });
    if (bytes === null) return refusal;
    problem = JSON.parse(decodeUtf8(bytes));
  } catch (error) {
    if (call.signal.aborted) throw callFailure(call, error);
    // An unreadable problem document leaves only the status.
    return refusal;
  }
  if (typeof problem !== "object" || problem === null) return refusal;
  const { code, detail } = problem as Record<string, unknown>;
  if (typeof code === "string" && isErrorCode(code)) refusal.code = code;
  if (typeof detail === "string") refusal.detail = detail.slice(0, 500);
  return refusal;
}

/**
 * Describes a refusal and what to do about it, naming its cause where the
 * answer shows one.
 *
 * @param refusal What the server answered.
 * @param pinned Whether the URL was pinned to the listing's digest.
 * @returns `the server answered <status>[ <code>]` and the remedy.
 */
function describeRefusal(refusal: ServerRefusal, pinned: boolean): string {
  const { status, code } = refusal;
  if (code === undefined) {
    return GATEWAY_STATUSES.has(status)
      ? `the server answered ${status} without a problem document: ${GATEWAY_REMEDY}`
      : `the server answered ${status}; ${FETCH_REMEDY}`;
  }
  if (pinned && status === 404 && code === "MODULE_NOT_FOUND") {
    return `the server answered ${status} ${code}: ${STALE_LISTING_REMEDY}`;
  }
  return MOMENTARY_CODES.has(code)
    ? `the server answered ${status} ${code}: ${MOMENTARY_REMEDY}`
    : `the server answered ${status} ${code}; ${FETCH_REMEDY}`;
}

/**
 * Whether the catalog was given `headers` (credentials, as a rule): then
 * it follows no redirect, which would take them to an address its
 * operator never named. Without them a redirect is followed, and what it
 * leads to is checked against its digest as any answer is.
 */
function sendsHeaders(endpoint: Endpoint): boolean {
  return !endpoint.headers.keys().next().done;
}

/**
 * Whether a fetch function's answer can be read as a `Response`. A caller's
 * own fetch may answer with another realm's or library's Response, so its
 * shape is checked rather than its class.
 */
function isResponseLike(answer: unknown): answer is Response {
  const response = answer as Partial<Response> | null;
  return typeof response === "object" && response !== null &&
    typeof response.status === "number" &&
    typeof response.headers?.get === "function";
}

function notAResponse(call: Call, answer: unknown): CordonError {
  const kind = answer === null ? "null" : typeof answer;
  return new CordonError(
    "FETCH_FAILED",
    `Cannot fetch ${call.what} from ${call.url}: the fetch option answered with ${kind}, not a Response; pass a function that answers as fetch does`,
  );
}

async function send(
  endpoint: Endpoint,
  call: Call,
  headers: Headers,
  reload = false,
): Promise<Response> {
  const guarded = sendsHeaders(endpoint);
  let response: Response;
  try {
    // A fetch of the caller's own may ignore its signal: the deadline still
    // ends the call, and gives back its request slot.
    response = await settleUnlessAborted(
      endpoint.fetch(call.url, {
        method: "GET",
        headers,
        signal: call.fetchSignal,
        ...(guarded ? { redirect: "manual" as const } : {}),
        ...(reload ? { cache: "reload" as const } : {}),
      }),
      call.signal,
      () => {
        throw call.signal.reason;
      },
    );
  } catch (error) {
    throw callFailure(call, error);
  }
  if (!isResponseLike(response)) throw notAResponse(call, response);
  if (guarded && isRedirect(response)) {
    await response.body?.cancel().catch(() => {});
    throw redirectRefused(call, response);
  }
  return response;
}

function headersWith(base: Headers, extra: Record<string, string>): Headers {
  const headers = new Headers(base);
  for (const [name, value] of Object.entries(extra)) headers.set(name, value);
  return headers;
}

/** Why a module body past `maxModuleBytes` was abandoned. */
export function moduleTooLarge(endpoint: Endpoint): string {
  return `its body is longer than maxModuleBytes (${endpoint.maxModuleBytes} bytes); the module was not cached or run; check the pack on the server, or raise maxModuleBytes if the module is meant to be that large`;
}

/** Why a listing body past `maxListingBytes` was abandoned. */
export function listingTooLarge(endpoint: Endpoint): string {
  return `its body is longer than maxListingBytes (${endpoint.maxListingBytes} bytes); point the catalog at a cordon delivery server, or raise maxListingBytes if the server lists that many packs`;
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
 * @param names Only these packs (`?packs=a,b`); every pack when omitted. A
 * server that lists every pack anyway is read the same way.
 * @returns The listing, or word that the one held is current.
 * @throws {CordonError} `FETCH_FAILED` when the listing cannot be fetched
 * within `fetchTimeoutMs`, is longer than `maxListingBytes` or does not
 * match the schema; `ABORTED` when cancelled.
 */
export async function fetchListing(
  endpoint: Endpoint,
  etag: string | undefined,
  what: string,
  signal: AbortSignal | undefined,
  names?: readonly string[],
): Promise<ListingAnswer> {
  const url = names === undefined
    ? endpoint.listingUrl
    : `${endpoint.listingUrl}?packs=${names.map(encodeURIComponent).join(",")}`;
  const answer = await fetchFile(endpoint, url, what, {
    maxBytes: endpoint.maxListingBytes,
    tooLarge: listingTooLarge(endpoint),
    accept: "application/json",
    ...(etag === undefined ? {} : { etag }),
    ...(signal === undefined ? {} : { signal }),
  });
  if (answer.notModified) return answer;
  const listing = readJson(answer.bytes, CatalogListingSchema, {
    what,
    url,
    schemaName: "the catalog listing schema",
    remedy: "point the catalog at a cordon delivery server",
  });
  const twice = packListedTwice(listing);
  if (twice !== undefined) {
    throw new CordonError(
      "FETCH_FAILED",
      `Cannot read ${what} from ${url}: it names pack ${
        JSON.stringify(twice)
      } twice, which a cordon delivery server never does; ${FETCH_REMEDY}`,
    );
  }
  return { notModified: false, listing, etag: answer.etag };
}

/**
 * A pack a listing names twice, or `undefined`: which of its two entries a
 * run got would depend on the order of the listing. (A module id given to
 * two packs refuses only the later pack; see the catalog.)
 */
function packListedTwice(listing: CatalogListing): string | undefined {
  const names = new Set<string>();
  for (const { name } of listing.packs) {
    if (names.has(name)) return name;
    names.add(name);
  }
  return undefined;
}

/**
 * Reads a fetched JSON body against a schema, with the catalogs' messages.
 *
 * @param bytes The body.
 * @param schema The schema it must match.
 * @param about What the body is for and where it came from, the schema's
 * name and what to do when it does not match, for messages.
 * @returns The valid value.
 * @throws {CordonError} `FETCH_FAILED` when the body is not JSON or does
 * not match.
 */
export function readJson<T>(
  bytes: Uint8Array,
  schema: Schema<T>,
  about: { what: string; url: string; schemaName: string; remedy: string },
): T {
  const { what, url } = about;
  let body: unknown;
  try {
    body = JSON.parse(decodeUtf8(bytes));
  } catch (error) {
    const instead = misservedBody(bytes, "it is");
    throw new CordonError(
      "FETCH_FAILED",
      `Cannot read ${what} from ${url}: the body is not JSON${
        instead === undefined ? `; ${FETCH_REMEDY}` : `, and ${instead}`
      }`,
      { cause: error },
    );
  }
  const parsed = parseUntrusted(schema, body, { firstIssue: true });
  if (!parsed.success) {
    throw new CordonError(
      "FETCH_FAILED",
      `Cannot read ${what} from ${url}: it does not match ${about.schemaName}; ${about.remedy}`,
      { cause: parsed.error },
    );
  }
  return parsed.data;
}

/**
 * Checks bytes against the digest the listing gives and the one the
 * response announces, and decodes them.
 *
 * @param target The module, with the listing's digest.
 * @param bytes The body.
 * @param announced The response's `Repr-Digest` header.
 * @param crossOrigin Whether a browser read the response from another
 * origin (`response.type` is `"cors"`), which shows the page only the
 * headers the response exposes.
 * @returns The source text.
 * @throws {CordonError} `DIGEST_MISMATCH` on any disagreement;
 * `FETCH_FAILED` when verified bytes are not UTF-8.
 */
export async function verifyBytes(
  target: ModuleTarget,
  bytes: Uint8Array<ArrayBuffer>,
  announced: string | null,
  crossOrigin = false,
): Promise<string> {
  if (announced === null && crossOrigin) {
    throw refuseModule(
      target,
      `the response has no Repr-Digest header this page may read: ${UNEXPOSED_REMEDY}`,
      false,
    );
  }
  if (announced === null) {
    throw refuseHeader(target, bytes, "the response has no Repr-Digest header");
  }
  const header = parseReprDigest(announced);
  if (header === undefined) {
    throw refuseHeader(
      target,
      bytes,
      "its Repr-Digest header has no valid sha-256 member",
    );
  }
  if (header !== target.digest) {
    throw refuseModule(
      target,
      `its Repr-Digest header announces ${header} but the catalog listing gives ${target.digest}`,
    );
  }
  return await verifyBody(target, bytes);
}

/**
 * A refusal for a `Repr-Digest` header that is missing or unreadable,
 * naming what the body is where it shows it: a login or error page, or
 * gzip data, sent with 200 by a portal or proxy that drops the header, is
 * a misconfigured path more often than a hostile server.
 */
function refuseHeader(
  target: ModuleTarget,
  bytes: Uint8Array,
  problem: string,
): CordonError {
  const instead = misservedBody(bytes, "the body is");
  return instead === undefined
    ? refuseModule(target, problem)
    : refuseModule(target, `${problem}, and ${instead}`, false);
}

function refuseModule(
  target: ModuleTarget,
  detail: string,
  distrust = true,
): CordonError {
  return new CordonError(
    "DIGEST_MISMATCH",
    `Refusing ${describeModule(target)}: ${detail}; ${
      refusalEnding("module", distrust)
    }`,
  );
}

/**
 * Checks bytes against the digest the listing gives, and decodes them. A
 * static host sends no `Repr-Digest`, so this is the whole check there.
 *
 * @param target The module, with the listing's digest.
 * @param bytes The body.
 * @returns The source text.
 * @throws {CordonError} `DIGEST_MISMATCH` when the bytes hash to another
 * digest; `FETCH_FAILED` when verified bytes are not UTF-8.
 */
export async function verifyBody(
  target: ModuleTarget,
  bytes: Uint8Array<ArrayBuffer>,
): Promise<string> {
  const actual = await sha256Digest(bytes);
  if (actual !== target.digest) {
    const { detail, misserved } = mismatchDetail(
      bytes,
      `its bytes hash to ${actual} but the catalog listing gives ${target.digest}`,
    );
    throw refuseModule(target, detail, !misserved);
  }
  try {
    return decodeUtf8(bytes);
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

/** How one file of a static host is asked for and read. */
interface FileRequest {
  /** The most body bytes read. */
  maxBytes: number;
  /** The message's detail when the body is longer than `maxBytes`. */
  tooLarge: string;
  /** The media type asked for, sent as `Accept`. */
  accept: string;
  signal?: AbortSignal;
  /** Past the HTTP cache: see {@linkcode reloadingOnMismatch}. */
  reload?: boolean;
}

/**
 * Fetches one whole file of a static host, with no entity tag to
 * revalidate: {@linkcode fetchFile} without the 304.
 *
 * @returns The body and its entity tag.
 * @throws {CordonError} As {@linkcode fetchFile}.
 */
export async function fetchFileBytes(
  endpoint: Endpoint,
  url: string,
  what: string,
  options: FileRequest,
): Promise<{ bytes: Uint8Array<ArrayBuffer>; etag: string | undefined }> {
  const answer = await fetchFile(endpoint, url, what, options);
  // Without an entity tag sent, only a 200 is accepted.
  if (answer.notModified) throw new TypeError("A 304 without If-None-Match");
  return answer;
}

/**
 * Whether an answer to a request sent with `redirect: "manual"` is a
 * redirect: browsers hide it (an opaque redirect, status 0), Deno and Node
 * give its 3xx status.
 */
function isRedirect(response: Response): boolean {
  return response.type === "opaqueredirect" ||
    (response.status >= 300 && response.status < 400 &&
      response.status !== 304);
}

function redirectRefused(call: Call, response: Response): CordonError {
  const status = response.status === 0 ? "" : ` (${response.status})`;
  return new CordonError(
    "FETCH_FAILED",
    `Cannot fetch ${call.what} from ${call.url}: the host answered a redirect${status}, which the catalog does not follow while it sends the headers it was given (they would go to an address nobody configured); ${
      redirectRemedy(call.url, response.headers.get("location"))
    }`,
  );
}

/**
 * What to do about a redirect. A proxy that redirects `/x` to `/x/`
 * (nginx does for `location /x/` with `proxy_pass`) cannot be followed by
 * pointing the catalog elsewhere: the listing lives at the prefix, which
 * never ends in `/`.
 */
function redirectRemedy(url: string, location: string | null): string {
  const from = new URL(url).pathname;
  let to: string | undefined;
  try {
    if (location !== null) to = new URL(location, url).pathname;
  } catch {
    // An unreadable Location gets the general remedy.
  }
  if (to !== undefined && to === `${from}/`) {
    const path = operatorText(from, 200);
    return `the host redirects ${path} to ${path}/, as nginx does for location ${path}/; give that path its own location (nginx: location = ${path})`;
  }
  return "point the catalog at the address the host redirects to";
}

/** A file of a static tree, or word that the one held is current. */
export type FileAnswer =
  | { notModified: true }
  | {
    notModified: false;
    bytes: Uint8Array<ArrayBuffer>;
    etag: string | undefined;
  };

/**
 * Fetches one file of a static host (a staged tree's index, a pack index
 * or a module's bytes) within the endpoint's deadline, reading at most
 * `maxBytes`, with the remote catalog's messages.
 *
 * @param endpoint Where to ask, with its deadline and headers.
 * @param url The file's URL.
 * @param what What the file is for, for messages.
 * @param options The cap, its message, an entity tag to revalidate, the
 * media type asked for, and a signal.
 * @returns The body and entity tag, or word that the held copy is current.
 * @throws {CordonError} `FETCH_FAILED` when the file cannot be fetched in
 * time, is not there or is longer than `maxBytes`; `ABORTED` when
 * cancelled.
 */
export async function fetchFile(
  endpoint: Endpoint,
  url: string,
  what: string,
  options: FileRequest & { etag?: string },
): Promise<FileAnswer> {
  return await withSlot(
    endpoint,
    what,
    options.signal,
    () => fetchFileNow(endpoint, url, what, options),
  );
}

async function fetchFileNow(
  endpoint: Endpoint,
  url: string,
  what: string,
  options: FileRequest & { etag?: string },
): Promise<FileAnswer> {
  const call = startCall(endpoint, url, what, options.signal);
  try {
    return await answerFile(endpoint, call, options);
  } finally {
    call.end();
  }
}

async function answerFile(
  endpoint: Endpoint,
  call: Call,
  options: FileRequest & { etag?: string },
): Promise<FileAnswer> {
  const { etag } = options;
  const { url, what } = call;
  const headers = headersWith(endpoint.headers, {
    accept: options.accept,
    ...(etag === undefined ? {} : { "if-none-match": etag }),
  });
  const response = await send(endpoint, call, headers, options.reload);
  if (response.status === 304 && etag !== undefined) {
    await response.body?.cancel().catch(() => {});
    return { notModified: true };
  }
  if (response.status !== 200) {
    const refusal = await readProblem(call, response);
    throw new CordonError(
      "FETCH_FAILED",
      `Cannot fetch ${what} from ${url}: ${describeRefusal(refusal, false)}`,
    );
  }
  const bytes = await readBody(
    call,
    response,
    options.maxBytes,
    options.tooLarge,
  );
  return {
    notModified: false,
    bytes,
    etag: response.headers.get("etag") ?? undefined,
  };
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
 * server refused; also when the module cannot be fetched within
 * `fetchTimeoutMs` or is longer than `maxModuleBytes`), `DIGEST_MISMATCH`,
 * or `ABORTED`.
 */
export async function fetchModule(
  endpoint: Endpoint,
  target: ModuleTarget,
  options: { pinned: boolean; etag?: string; signal?: AbortSignal },
): Promise<VerifiedModule | undefined> {
  return await withSlot(
    endpoint,
    describeModule(target),
    options.signal,
    () =>
      reloadingOnMismatch((reload) =>
        fetchModuleNow(endpoint, target, { ...options, reload })
      ),
  );
}

/**
 * Runs `attempt`, and once more past the HTTP cache (`cache: "reload"`)
 * when the bytes it got fail their digest. A browser keeps a module's
 * answer for a year, its URL being pinned to the digest and served
 * immutable: one bad answer (a proxy that rewrote it, a captive portal's
 * page, a copy cut short) would otherwise fail every later load of the
 * page from that cache, never asking the server again. The reload asks
 * the server and replaces what the cache kept; its bytes are checked as
 * the first ones were.
 *
 * @param attempt Fetches and verifies, past the HTTP cache when `reload`.
 * @returns What the first attempt, or else the reload, verified.
 * @throws {CordonError} `DIGEST_MISMATCH` when the reload's bytes fail
 * too; whatever else `attempt` throws, at once.
 */
export async function reloadingOnMismatch<T>(
  attempt: (reload: boolean) => Promise<T>,
): Promise<T> {
  try {
    return await attempt(false);
  } catch (error) {
    if (!(error instanceof CordonError) || error.code !== "DIGEST_MISMATCH") {
      throw error;
    }
    return await attempt(true);
  }
}

async function fetchModuleNow(
  endpoint: Endpoint,
  target: ModuleTarget,
  options: {
    pinned: boolean;
    etag?: string;
    signal?: AbortSignal;
    reload: boolean;
  },
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
  const call = startCall(endpoint, url, describeModule(target), signal);
  try {
    return await answerModule(endpoint, call, target, headers, options);
  } finally {
    call.end();
  }
}

async function answerModule(
  endpoint: Endpoint,
  call: Call,
  target: ModuleTarget,
  headers: Headers,
  options: { pinned: boolean; etag?: string; reload: boolean },
): Promise<VerifiedModule | undefined> {
  const { pinned, etag, reload } = options;
  const { url, what } = call;
  const response = await send(endpoint, call, headers, reload);
  if (response.status === 304 && etag !== undefined) {
    await response.body?.cancel().catch(() => {});
    return undefined;
  }
  if (response.status !== 200) {
    const refusal = await readProblem(call, response);
    throw new RefusedError(
      `Cannot fetch ${what} from ${url}: ${describeRefusal(refusal, pinned)}`,
      refusal,
    );
  }
  const bytes = await readBody(
    call,
    response,
    endpoint.maxModuleBytes,
    moduleTooLarge(endpoint),
  );
  const source = await verifyBytes(
    target,
    bytes,
    response.headers.get("repr-digest"),
    response.type === "cors",
  );
  return {
    source,
    digest: target.digest,
    etag: response.headers.get("etag") ?? undefined,
    graphDigest: response.headers.get("x-cordon-graph-digest") ?? undefined,
  };
}
