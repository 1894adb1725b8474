/**
 * The delivery handler's request path, as small top-level functions over
 * one {@linkcode HandlerContext} (what the handler was built with) and one
 * {@linkcode RequestState} per request. `createDeliveryHandler` and
 * `serveDelivery` both build it here; only `serveDelivery` turns on
 * `servedByDeno`.
 *
 * A response handed to an unknown caller must be fresh and whole, because
 * callers (middleware, frameworks) may read or change its headers, and a
 * change to a shared response would reach every later request.
 * `serveDelivery` hands its responses straight to `Deno.serve`, so
 * `servedByDeno` lets it skip what only such a caller needs:
 *
 * - bodyless module answers (`304`, `HEAD`) are one prepared `Response` per
 *   variant, not a clone per request: `Deno.serve` only reads a bodyless
 *   response (its status and header list) and never marks it used;
 * - a module's `200` leaves `Content-Length` to `Deno.serve`, which writes
 *   the same value from the body it sends, instead of parsing ours.
 *
 * @module
 */

import type { ServerRequest } from "../protocol/server_telemetry.ts";
import {
  type AuthorizeNow,
  deliveryAuthorizer,
  type EntitledNow,
  type ListNow,
  packEntitlement,
  summariesReader,
  type WaitSignal,
} from "../catalog/in_memory_delivery.ts";
import type { SandboxModuleCatalog } from "../catalog/types.ts";
import {
  type AuthorizedDelivery,
  type DeliveryRefusal,
  isModuleId,
  type Requester,
} from "../protocol/mod.ts";
import { isThenable } from "../protocol/deadline.ts";
import { callSink } from "../protocol/hook_calls.ts";
import {
  ANONYMOUS_REQUESTER,
  hasStringIds,
  snapshotRequester,
} from "../protocol/requester.ts";
import { isHostHeader } from "../protocol/host_header.ts";
import {
  DELIVERY_PREFIX_RULE,
  isDeliveryPrefix,
} from "../protocol/delivery_prefix.ts";
import { answeredReason, CatalogDeadline } from "./_catalog_deadline.ts";
import { preflightHeaders } from "./_cors.ts";
import { ifMatchMatches, ifNoneMatchMatches } from "./_etag.ts";
import {
  acceptsGzip,
  ListingCache,
  type PreparedListing,
  readPackNames,
} from "./_listing.ts";
import {
  ModuleResponseCache,
  type PreparedModule,
  VARIANT,
} from "./_module_cache.ts";
import { type ProblemKind, ProblemResponses, PROBLEMS } from "./_problem.ts";
import { decodeOnce, queryParam, splitRequestUrl } from "./_request_target.ts";
import { DeliveryTelemetry } from "./_telemetry.ts";
import type {
  DeliveryHandler,
  DeliveryHandlerOptions,
  DeliveryRoute,
} from "./types.ts";

/** What {@linkcode buildDeliveryHandler} needs. */
export interface HandlerSettings {
  /** The route prefix, already defaulted. */
  prefix: string;
  /** The requester hook. */
  requester?: DeliveryHandlerOptions["requester"];
  /** The request hook. */
  onRequest?: DeliveryHandlerOptions["onRequest"];
  /**
   * How long a request waits for the catalog and the requester hook, in
   * milliseconds, already read and defaulted.
   */
  catalogTimeoutMs: number;
  /**
   * The request headers other origins may send, checked by
   * `readCorsRequestHeaders` where the options are read.
   */
  corsRequestHeaders: readonly string[];
  /**
   * Whether every response goes to `Deno.serve` unchanged, so bodyless
   * answers may be shared and a `200` leaves `Content-Length` to it.
   */
  servedByDeno: boolean;
}

/** What the handler was built with, shared by every request. */
interface HandlerContext {
  /** Asks the catalog once, at once when it answers from memory. */
  readonly authorize: AuthorizeNow;
  /** Lists the catalog's packs, without a copy when it answers from memory. */
  readonly listNow: ListNow;
  /**
   * Tells whether a requester may have a pack, when the listing differs
   * per requester: only with a requester hook, over a catalog whose
   * policy does not allow everyone everything.
   */
  readonly entitled: EntitledNow | undefined;
  readonly requester: DeliveryHandlerOptions["requester"];
  readonly onRequest: DeliveryHandlerOptions["onRequest"];
  readonly catalogTimeoutMs: number;
  readonly modulePrefix: string;
  readonly listingPath: string;
  readonly modules: ModuleResponseCache;
  readonly listings: ListingCache;
  readonly problems: ProblemResponses;
  readonly telemetry: DeliveryTelemetry;
  /** Whether requests are timed: only when someone reads the duration. */
  readonly timed: boolean;
  readonly preflight: Response;
}

/**
 * One request in flight: what it asked, what matched, how it ended. It is
 * the {@linkcode WaitSignal} its catalog calls read their signal from, so
 * only a call that reads it sets the request's bound up.
 */
class RequestState implements WaitSignal {
  readonly request: Request;
  readonly started: number;
  readonly span: ServerRequest;
  readonly method: string;
  readonly head: boolean;
  readonly path: string;
  readonly query: string;
  route: DeliveryRoute = "none";
  problem: ProblemKind | undefined = undefined;
  /** The `digest` query parameter of a module request. */
  pinned: string | null | undefined = undefined;
  /** The bound on its waits, from its first wait for the catalog or hook. */
  deadline: CatalogDeadline | undefined = undefined;
  #answered = false;
  readonly #catalogTimeoutMs: number;

  /**
   * Starts recording a request.
   *
   * @param context The handler's settings.
   * @param request The request.
   */
  constructor(context: HandlerContext, request: Request) {
    this.request = request;
    this.started = context.timed ? performance.now() : 0;
    this.span = context.telemetry.start(request);
    this.method = request.method;
    this.head = this.method === "HEAD";
    const { path, query } = splitRequestUrl(request.url);
    this.path = path;
    this.query = query;
    this.#catalogTimeoutMs = context.catalogTimeoutMs;
  }

  /** The bound on the request's waits, set up at the first. */
  bound(): CatalogDeadline {
    return this.deadline ??= new CatalogDeadline(
      this.#catalogTimeoutMs,
      this.request.signal,
    );
  }

  /**
   * Aborts when the request stops waiting for its catalog: at
   * `catalogTimeoutMs`, or when its client goes. A policy that reads it
   * first after the answer gets it aborted, and sets up no bound that
   * would hold the request until `catalogTimeoutMs`.
   */
  get signal(): AbortSignal {
    if (this.#answered && this.deadline === undefined) {
      return AbortSignal.abort(answeredReason());
    }
    return this.bound().signal;
  }

  /** Ends the request's waits: it is answered. */
  answered(): void {
    this.#answered = true;
    this.deadline?.[Symbol.dispose]();
  }
}

/** What the catalog answers to one delivery request. */
type Authorization = AuthorizedDelivery | DeliveryRefusal;

const MAX_CACHED_MODULES = 4096;
const MAX_CACHED_BYTES = 64 * 1024 * 1024;

/**
 * Builds the delivery handler over a catalog.
 *
 * @param catalog The catalog; borrowed, never disposed.
 * @param settings The prefix, hooks and whether `Deno.serve` gets the
 * answers.
 * @returns The handler.
 * @throws {TypeError} When `prefix` is not a valid path prefix or not
 * written as a request's URL holds it, or `requester` or `onRequest` is
 * not a function.
 */
export function buildDeliveryHandler(
  catalog: SandboxModuleCatalog,
  settings: HandlerSettings,
): DeliveryHandler {
  const { prefix, requester, onRequest, servedByDeno } = settings;
  if (!isDeliveryPrefix(prefix)) {
    throw new TypeError(
      `Cannot create a delivery handler: ${DELIVERY_PREFIX_RULE}`,
    );
  }
  // Routing compares the path as the request's URL holds it, so a prefix
  // the URL parser would rewrite (non-ASCII, a dot segment, a backslash)
  // would leave every request unrouted.
  const arrives = new URL(`http://h${prefix}`).pathname;
  if (prefix !== "" && arrives !== prefix) {
    throw new TypeError(
      `Cannot create a delivery handler: prefix must be written as a request's URL holds it: ${
        JSON.stringify(prefix)
      } arrives as ${JSON.stringify(arrives)}`,
    );
  }
  for (
    const [name, hook] of [["requester", requester], ["onRequest", onRequest]]
  ) {
    if (hook !== undefined && typeof hook !== "function") {
      throw new TypeError(
        `Cannot create a delivery handler: ${name} must be a function`,
      );
    }
  }
  const telemetry = new DeliveryTelemetry(prefix);
  // Without a hook every request is the same anonymous requester, whom the
  // module route asks nothing about either: the listing stays one for all.
  const entitled = requester === undefined
    ? undefined
    : packEntitlement(catalog);
  const context: HandlerContext = {
    authorize: deliveryAuthorizer(catalog),
    listNow: summariesReader(catalog),
    entitled,
    requester,
    onRequest,
    catalogTimeoutMs: settings.catalogTimeoutMs,
    modulePrefix: `${prefix}/`,
    listingPath: prefix === "" ? "/" : prefix,
    modules: new ModuleResponseCache({
      scope: requester === undefined ? "public" : "private",
      maxEntries: MAX_CACHED_MODULES,
      maxBytes: MAX_CACHED_BYTES,
      servedByDeno,
    }),
    listings: new ListingCache(entitled === undefined ? "public" : "private"),
    problems: new ProblemResponses(),
    telemetry,
    timed: telemetry.metered || onRequest !== undefined,
    preflight: new Response(null, {
      status: 204,
      headers: preflightHeaders(settings.corsRequestHeaders),
    }),
  };
  return function handleDelivery(request: Request): Promise<Response> {
    return handle(context, request);
  };
}

/** Answers one request, records it, and never rejects. */
function handle(context: HandlerContext, request: Request): Promise<Response> {
  const state = new RequestState(context, request);
  let answered: Response | Promise<Response>;
  try {
    answered = context.telemetry.within(
      state.span,
      () => answer(context, state),
    );
  } catch (error) {
    return Promise.resolve(recover(context, state, error));
  }
  if (answered instanceof Promise) {
    return answered.then(
      (response) => finish(context, state, response),
      (error) => recover(context, state, error),
    );
  }
  return Promise.resolve(finish(context, state, answered));
}

/**
 * Routes a request. The answer is not finished yet: the caller records
 * it. A promise settles to the answer or rejects with a fault.
 */
function answer(
  context: HandlerContext,
  state: RequestState,
): Response | Promise<Response> {
  const { method, path } = state;
  // The URL holds the Host header as sent: one with a path in it would
  // move the request's target (see `isHostHeader`).
  const host = state.request.headers.get("host");
  if (host !== null && !isHostHeader(host)) {
    return fail(context, state, PROBLEMS.requestInvalid);
  }
  // `{prefix}/` is the listing too: nginx's `location /x/` answers `/x`
  // with a redirect to `/x/`, and the empty id names no module.
  const isListing = path === context.listingPath ||
    path === context.modulePrefix;
  if (!isListing && !path.startsWith(context.modulePrefix)) {
    return fail(context, state, PROBLEMS.routeNotFound);
  }
  state.route = isListing ? "listing" : "module";
  if (!state.head && method !== "GET") {
    if (method === "OPTIONS") return context.preflight.clone();
    return fail(context, state, PROBLEMS.methodNotAllowed);
  }
  return isListing ? serveListing(context, state) : serveModule(context, state);
}

/**
 * Answers the listing (every pack, or the packs `?packs=` names; of those,
 * only the ones the requester may have when the policy decides per
 * requester), revalidated with `If-None-Match`, gzip-compressed when the
 * client accepts it.
 */
function serveListing(
  context: HandlerContext,
  state: RequestState,
): Response | Promise<Response> {
  const names = readPackNames(state.query);
  if (names === null) return fail(context, state, PROBLEMS.listingQueryInvalid);
  const { entitled, requester } = context;
  if (entitled === undefined || requester === undefined) {
    return context.listings.prepare(context.listNow(), names).then(
      (listing) => respondListing(context, state, listing),
    );
  }
  // A hook that throws is answered 503, as on the module route.
  const who = requester(state.request);
  return (isThenable(who) ? within(state, who) : Promise.resolve(who))
    .then((requesterNow) =>
      allowedListing(
        context,
        state,
        entitled,
        hookRequester(requesterNow),
        names,
      )
    )
    .then((listing) => respondListing(context, state, listing));
}

/**
 * The listing of the packs a requester may have, of those asked for. A
 * pack the policy refuses, or fails to decide, is left out as if it were
 * not installed: a 503 would tell the requester that the pack exists (the
 * policy is asked about installed packs only), and one pack's failing
 * policy would take the listing of every other pack down with it. So is a
 * pack whose policy has not answered when the request's deadline passes.
 * A client that went while a policy was deciding gets the 503 the module
 * route answers it: the listing would tell no one anything, and a 200
 * would have the request's record say a listing was served.
 */
async function allowedListing(
  context: HandlerContext,
  state: RequestState,
  entitled: EntitledNow,
  requester: Requester,
  names: readonly string[] | undefined,
): Promise<PreparedListing> {
  const summaries = context.listNow();
  const candidates = context.listings.candidates(summaries, names);
  const answers = candidates.map((pack) => entitled(pack, requester, state));
  // Only a policy that waits makes the listing wait for every answer.
  const allowed = answers.some(isThenable)
    ? await Promise.all(
      answers.map((answer) =>
        isThenable(answer) ? within(state, answer).catch(() => false) : answer
      ),
    )
    : answers as boolean[];
  // Read only once the bound was set up, which read the signal already.
  if (state.deadline !== undefined && state.request.signal.aborted) {
    throw state.request.signal.reason;
  }
  const packs = candidates.filter((_, i) => allowed[i] === true);
  return context.listings.prepareOf(summaries, packs);
}

/** Answers a prepared listing, after the request's preconditions. */
function respondListing(
  context: HandlerContext,
  state: RequestState,
  listing: PreparedListing,
): Response {
  const headers = state.request.headers;
  const gzip = acceptsGzip(headers.get("accept-encoding"));
  if (!preconditionHolds(state, listing.etagFor(gzip))) {
    return fail(context, state, PROBLEMS.preconditionFailed);
  }
  return listing.respond(headers.get("if-none-match"), gzip, state.head);
}

/**
 * Whether the request's `If-Match`, if it sent one, names the tag of the
 * answer it would get. RFC 9110 §13.2.2 evaluates it before
 * `If-None-Match`; a client that sends it wants no other version.
 */
function preconditionHolds(state: RequestState, etag: string): boolean {
  const ifMatch = state.request.headers.get("if-match");
  return ifMatch === null || ifMatchMatches(ifMatch, etag);
}

/**
 * Answers a module request. Everything the catalog can answer at once
 * (and every module version already prepared) is answered synchronously;
 * only a requester hook, a catalog or a first hashing that waits makes
 * the answer a promise.
 */
function serveModule(
  context: HandlerContext,
  state: RequestState,
): Response | Promise<Response> {
  const rawId = state.path.slice(context.modulePrefix.length);
  const id = rawId.includes("/") ? undefined : decodeOnce(rawId);
  if (!isModuleId(id)) {
    return fail(context, state, PROBLEMS.idInvalid);
  }
  state.pinned = pinnedDigest(state.query);
  const { requester } = context;
  if (requester === undefined) {
    return answerModule(context, state, id, undefined);
  }
  const who = requester(state.request);
  if (isThenable(who)) {
    return within(state, who).then((requesterNow) =>
      answerModule(context, state, id, hookRequester(requesterNow))
    );
  }
  return answerModule(context, state, id, hookRequester(who));
}

/**
 * Answers a module request for `requester` once it is known: at once when
 * the catalog answers at once.
 */
function answerModule(
  context: HandlerContext,
  state: RequestState,
  id: string,
  requester: Requester | undefined,
): Response | Promise<Response> {
  const result = authorizeWithin(context, state, id, requester);
  return result instanceof Promise
    ? result.then((ready) => deliver(context, state, id, ready))
    : deliver(context, state, id, result);
}

/**
 * The requester the catalog is asked about for what the `requester` hook
 * answered: the anonymous requester when it names none, on both routes,
 * never `undefined`, which a catalog may read as no requester named at all
 * (a remote catalog then answers for the one its headers authenticate).
 * The copy holds the ids read here, and none from `Object.prototype`. A
 * hook that answers no requester (a string, an id of another type, which
 * a policy could read as anyone) fails as one that throws (503).
 *
 * @throws {TypeError} When it is no object, or an id is not a string.
 */
function hookRequester(answer: Requester | null | undefined): Requester {
  if (answer === undefined || answer === null) return ANONYMOUS_REQUESTER;
  const requester = typeof answer === "object"
    ? snapshotRequester(answer)
    : undefined;
  if (requester === undefined || !hasStringIds(requester)) {
    throw new TypeError(
      "Cannot read the requester: the requester hook must answer { principalId?, tenantId? }, each a string",
    );
  }
  return requester;
}

/**
 * Asks the catalog for a module: its answer as it gives it when it gives
 * one at once, else a promise bounded by the request's deadline.
 */
function authorizeWithin(
  context: HandlerContext,
  state: RequestState,
  id: string,
  requester: Requester | undefined,
): Authorization | Promise<Authorization> {
  const result = context.authorize(id, requester, state);
  return isThenable(result) ? within(state, result) : result;
}

/**
 * Waits for the catalog or the requester hook within the request's
 * `catalogTimeoutMs`, or until its client goes: then the wait rejects, and
 * the request is answered 503. Only a wait sets the bound up, so a request
 * answered from memory sets no timer.
 */
function within<T>(state: RequestState, work: PromiseLike<T>): Promise<T> {
  return state.bound().within(work);
}

/**
 * The digest a module URL is pinned to: `undefined` when none is given,
 * `null` when it cannot be read (malformed escapes, or two different
 * digests), which no installed version matches.
 */
function pinnedDigest(query: string): string | null | undefined {
  const values = queryParam(query, "digest");
  if (values === null) return null;
  if (values.length === 0) return undefined;
  return values.every((value) => value === values[0]) ? values[0]! : null;
}

/**
 * Answers the catalog's answer: a refusal, or the module's response. A
 * catalog written by a platform may answer with another module than the
 * one asked for: its bytes are not this URL's, so the answer is 503.
 */
function deliver(
  context: HandlerContext,
  state: RequestState,
  id: string,
  result: Authorization,
): Response | Promise<Response> {
  if (!result.ok) return refuse(context, state, result);
  if (result.moduleId !== id) return fail(context, state, PROBLEMS.unavailable);
  const prepared = context.modules.prepare(result);
  // Only a module's first request (per version) may wait for hashing.
  return prepared instanceof Promise
    ? prepared.then((ready) => respondModule(context, state, ready))
    : respondModule(context, state, prepared);
}

/** Picks the variant of a prepared module that answers the request. */
function respondModule(
  context: HandlerContext,
  state: RequestState,
  prepared: PreparedModule | undefined,
): Response {
  if (prepared === undefined) {
    return fail(context, state, PROBLEMS.unavailable);
  }
  const { pinned } = state;
  if (pinned !== undefined && pinned !== prepared.digest) {
    return fail(context, state, PROBLEMS.versionGone);
  }
  if (!preconditionHolds(state, prepared.etag)) {
    return fail(context, state, PROBLEMS.preconditionFailed);
  }
  const tag = state.request.headers.get("if-none-match");
  const notModified = tag !== null && ifNoneMatchMatches(tag, prepared.etag);
  const variant = pinned === undefined
    ? (notModified ? VARIANT.plainNotModified : VARIANT.plain)
    : (notModified ? VARIANT.pinnedNotModified : VARIANT.pinned);
  return prepared.respond(variant, state.head);
}

/** Answers a catalog's refusal with its problem. */
function refuse(
  context: HandlerContext,
  state: RequestState,
  refusal: DeliveryRefusal,
): Response {
  switch (refusal.reason) {
    case "forbidden":
      return fail(context, state, PROBLEMS.forbidden);
    case "not-found":
      return fail(
        context,
        state,
        refusal.code === "MODULE_ID_INVALID"
          ? PROBLEMS.idInvalid
          : PROBLEMS.notFound,
      );
    default:
      return fail(
        context,
        state,
        refusal.code === "PACK_FILE_CHANGED"
          ? PROBLEMS.fileChanged
          : PROBLEMS.unavailable,
      );
  }
}

/** Answers a problem and remembers it for the record. */
function fail(
  context: HandlerContext,
  state: RequestState,
  problem: ProblemKind,
): Response {
  state.problem = problem;
  return context.problems.respond(problem, state.head);
}

/** Answers 503 to a request whose catalog, hook or listing failed. */
function recover(
  context: HandlerContext,
  state: RequestState,
  error: unknown,
): Response {
  const response = fail(context, state, PROBLEMS.unavailable);
  return finish(context, state, response, error);
}

/** Records a request's answer (span, metrics, hook) and returns it. */
function finish(
  context: HandlerContext,
  state: RequestState,
  response: Response,
  error?: unknown,
): Response {
  state.answered();
  const durationMs = context.timed ? performance.now() - state.started : NaN;
  const code = state.problem?.code;
  const { method, route } = state;
  const status = response.status;
  context.telemetry.end(state.span, {
    route,
    status,
    code,
    method,
    durationMs,
  }, error);
  const { onRequest } = context;
  if (onRequest !== undefined) {
    // A logging hook must not change the answer.
    callSink(onRequest, {
      method,
      path: state.path,
      route,
      status,
      ...(code === undefined ? {} : { code }),
      durationMs,
    });
  }
  return response;
}
