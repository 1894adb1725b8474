// This module is browser compatible.

/**
 * The options the remote and the staged catalog share, read one way and
 * worded alike: the fetch function, the module cache, how long a fetched
 * listing is used, and the bounds of each request.
 *
 * @module
 */

import {
  DEFAULT_MAX_QUEUED,
  MAX_QUEUED_RANGE,
  readIntegerOption,
  TIMEOUT_MS_RANGE,
} from "../protocol/mod.ts";
import { messageOf } from "../protocol/options.ts";
import {
  DEFAULT_FETCH_TIMEOUT_MS,
  DEFAULT_MAX_LISTING_BYTES,
  DEFAULT_MAX_MODULE_BYTES,
} from "./_listed_pack.ts";
import type { Endpoint, FetchFunction, SlotBounds } from "./_remote_fetch.ts";
import {
  DEFAULT_MAX_CONCURRENT_FETCHES,
  MAX_CONCURRENT_FETCHES_RANGE,
} from "./_request_slots.ts";

/**
 * The `fetch` option, or the global `fetch` when it is absent.
 *
 * @param action What was being done: `"create a remote catalog"`.
 * @throws {TypeError} When it is not a function.
 */
export function readFetchFunction(
  action: string,
  given: FetchFunction | undefined,
): FetchFunction {
  const fetchFunction = given ??
    ((input: string, init: RequestInit) => globalThis.fetch(input, init));
  if (typeof fetchFunction !== "function") {
    throw new TypeError(`Cannot ${action}: fetch must be a function`);
  }
  return fetchFunction;
}

/**
 * The `headers` option, read once into the `Headers` sent with every
 * request: none when it is absent.
 *
 * Headers carry credentials, so no refusal quotes a value: a name or value
 * no request may carry is named by the option alone, and the runtime's own
 * error, which quotes it, is not kept as the cause.
 *
 * @param action What was being done: `"create a remote catalog"`.
 * @throws {TypeError} When it is not a `Headers`, a record of names to
 * values or a list of `[name, value]` pairs, when it holds a name or value
 * no request may carry, or when reading it throws.
 */
export function readCatalogHeaders(action: string, given: unknown): Headers {
  if (given === undefined) return new Headers();
  if (typeof given !== "object" || given === null) {
    throw new TypeError(`Cannot ${action}: ${HEADERS_RULE}`);
  }
  try {
    return new Headers(given as HeadersInit);
  } catch (error) {
    if (error instanceof TypeError) {
      throw new TypeError(
        `Cannot ${action}: headers holds a header no request may carry: ${HEADERS_RULE}, each name a token and each value without line breaks or NUL`,
      );
    }
    throw new TypeError(
      `Cannot ${action}: headers could not be read: ${messageOf(error)}`,
      { cause: error },
    );
  }
}

const HEADERS_RULE =
  "headers must be a Headers, a record of header names to values or a list of [name, value] pairs";

/**
 * The `cache` option (a `ModuleCache`), checked for the two methods a
 * catalog calls.
 *
 * @throws {TypeError} When it lacks `get` or `put`.
 */
export function checkModuleCache<Cache>(action: string, cache: Cache): Cache {
  const methods = cache as { get?: unknown; put?: unknown } | null;
  if (
    typeof methods !== "object" || methods === null ||
    typeof methods.get !== "function" || typeof methods.put !== "function"
  ) {
    throw new TypeError(
      `Cannot ${action}: cache must have get(digest) and put(digest, source)`,
    );
  }
  return cache;
}

/** What a max-age option may be: any whole number of milliseconds. */
const MAX_AGE_MS_RANGE = Object.freeze({
  min: 0,
  max: Number.MAX_SAFE_INTEGER,
  unit: "milliseconds",
});

/**
 * How long a fetched listing is used before it is revalidated, `0` when
 * absent.
 *
 * @param name The option's name: `"listingMaxAgeMs"`.
 * @throws {TypeError} When it is not a number.
 * @throws {RangeError} When it is not a whole number of milliseconds, 0 or
 * more.
 */
export function readMaxAgeMs(
  action: string,
  name: string,
  given: unknown,
): number {
  return readIntegerOption(action, name, given, 0, MAX_AGE_MS_RANGE);
}

/**
 * The bounds of one request, and of the requests in flight and waiting,
 * as their options give them.
 */
export type RequestBounds =
  & Pick<Endpoint, "fetchTimeoutMs" | "maxListingBytes" | "maxModuleBytes">
  & SlotBounds;

/**
 * Reads the bounds of each request, in this order, each its default when
 * absent.
 *
 * @throws {TypeError} When a bound is not a number.
 * @throws {RangeError} When a bound is not a positive integer
 * (`fetchTimeoutMs` at most 2147483647, `maxConcurrentFetches` at most
 * 1024), or `maxQueued` not an integer from 0 to 1000000000.
 */
export function readRequestBounds(
  action: string,
  given: Partial<RequestBounds>,
): RequestBounds {
  const bytes = { min: 1, max: Number.MAX_SAFE_INTEGER, unit: "bytes" };
  return {
    fetchTimeoutMs: readIntegerOption(
      action,
      "fetchTimeoutMs",
      given.fetchTimeoutMs,
      DEFAULT_FETCH_TIMEOUT_MS,
      TIMEOUT_MS_RANGE,
    ),
    maxListingBytes: readIntegerOption(
      action,
      "maxListingBytes",
      given.maxListingBytes,
      DEFAULT_MAX_LISTING_BYTES,
      bytes,
    ),
    maxModuleBytes: readIntegerOption(
      action,
      "maxModuleBytes",
      given.maxModuleBytes,
      DEFAULT_MAX_MODULE_BYTES,
      bytes,
    ),
    maxConcurrentFetches: readIntegerOption(
      action,
      "maxConcurrentFetches",
      given.maxConcurrentFetches,
      DEFAULT_MAX_CONCURRENT_FETCHES,
      MAX_CONCURRENT_FETCHES_RANGE,
    ),
    maxQueued: readIntegerOption(
      action,
      "maxQueued",
      given.maxQueued,
      DEFAULT_MAX_QUEUED,
      MAX_QUEUED_RANGE,
    ),
  };
}
