/**
 * The catalog listing responses: the whole listing, and the listing of the
 * packs one declaration names (`?packs=a,b`), which stays small however many
 * packs are installed. Each body is serialized, tagged and gzip-compressed
 * once per change of the catalog's summaries, never per request. A catalog
 * that lists one frozen list, replaced when it changes (the on-disk one),
 * is known unchanged by that list's identity; any other catalog's copy is
 * compared pack by pack.
 *
 * A listing shown per requester (the packs its entitlement policy allows)
 * is prepared from the packs it holds, so requesters allowed the same
 * packs share one body and one tag, and a body differs, tag included,
 * wherever what it lists differs. Such listings say `private`.
 *
 * @module
 */

import { sha256Digest } from "../catalog/digest.ts";
import type { PackSummary } from "../protocol/mod.ts";
import { isPackName } from "../protocol/mod.ts";
import { RecentMap } from "../protocol/recent.ts";
import { CORS_HEADERS } from "./_cors.ts";
import { ifNoneMatchMatches } from "./_etag.ts";
import { queryParam } from "./_request_target.ts";

/** The most packs one listing request may name. */
export const MAX_LISTED_PACKS = 64;
/** How many distinct pack selections keep their prepared answer. */
const MAX_SELECTIONS = 256;
/** Bodies shorter than this are sent as they are: gzip would not pay. */
const MIN_GZIP_BYTES = 1024;
/**
 * The most bytes of plain bodies the prepared per-requester listings hold
 * together (their gzip bodies add about two fifths): each may list up to
 * every pack, and requesters may be allowed many different sets of them.
 * The whole listing of 10,000 packs of 10 modules is 26 MiB.
 */
const MAX_SUBSET_BYTES = 64 * 1024 * 1024;

/**
 * `public` when every requester gets the same listing, `private` when
 * each gets the packs its entitlement policy allows it.
 */
export type ListingScope = "public" | "private";

/** What a listing serializes: `CatalogListing`, from a list it may not change. */
interface ListingBody {
  packs: readonly PackSummary[];
}

/** The listing's current body and entity tags. */
export interface PreparedListing {
  /**
   * Answers the listing.
   *
   * @param ifNoneMatch The request's `If-None-Match`, or `null`.
   * @param gzip Whether the client accepts a gzip body.
   * @param head Whether the request was `HEAD` (no body).
   * @returns A fresh response the caller owns.
   */
  respond(ifNoneMatch: string | null, gzip: boolean, head: boolean): Response;
  /**
   * The entity tag of the body {@linkcode respond} would send now.
   *
   * @param gzip Whether the client accepts a gzip body.
   * @returns The tag, quotes included.
   */
  etagFor(gzip: boolean): string;
}

/** One representation of a listing: its bytes, tag and response templates. */
class Representation {
  readonly etag: string;
  #templates: [body: Response, head: Response, notModified: Response];

  constructor(
    bytes: Uint8Array<ArrayBuffer>,
    etag: string,
    gzip: boolean,
    scope: ListingScope,
  ) {
    this.etag = etag;
    const common: [string, string][] = [
      ["etag", etag],
      // A shared cache must not answer one requester with another's packs.
      ["cache-control", scope === "public" ? "no-cache" : "private, no-cache"],
      ["vary", "accept-encoding"],
      ["x-content-type-options", "nosniff"],
      ...CORS_HEADERS.map(([k, v]): [string, string] => [k, v]),
    ];
    const headers: [string, string][] = [
      ["content-type", "application/json; charset=utf-8"],
      ["content-length", String(bytes.byteLength)],
      ...(gzip ? [["content-encoding", "gzip"] as [string, string]] : []),
      ...common,
    ];
    this.#templates = [
      new Response(bytes, { headers }),
      new Response(null, { headers }),
      new Response(null, { status: 304, headers: common }),
    ];
  }

  respond(notModified: boolean, head: boolean): Response {
    return this.#templates[notModified ? 2 : head ? 1 : 0].clone();
  }
}

class Listing implements PreparedListing {
  #plain: Representation;
  #bytes: Uint8Array<ArrayBuffer>;
  #digest: string;
  #scope: ListingScope;
  #gzip: Representation | undefined;
  #compressing = false;

  constructor(
    bytes: Uint8Array<ArrayBuffer>,
    digest: string,
    scope: ListingScope,
  ) {
    this.#bytes = bytes;
    this.#digest = digest;
    this.#scope = scope;
    this.#plain = new Representation(bytes, `"${digest}"`, false, scope);
  }

  static async of(body: ListingBody, scope: ListingScope): Promise<Listing> {
    const bytes = new TextEncoder().encode(JSON.stringify(body));
    return new Listing(bytes, await sha256Digest(bytes), scope);
  }

  /** The bytes of its plain body. */
  get size(): number {
    return this.#bytes.byteLength;
  }

  respond(ifNoneMatch: string | null, gzip: boolean, head: boolean): Response {
    if (gzip) this.#compress();
    const chosen = this.#chosen(gzip);
    // Only the tag of the body this request gets may match (RFC 9110
    // §13.1.2): a cache that sent the other one's tag holds a copy this
    // request may not be answered with, and a 304 would have it serve that
    // copy, or find no copy under the tag the 304 names.
    const notModified = ifNoneMatch !== null &&
      ifNoneMatchMatches(ifNoneMatch, chosen.etag);
    return chosen.respond(notModified, head);
  }

  etagFor(gzip: boolean): string {
    return this.#chosen(gzip).etag;
  }

  #chosen(gzip: boolean): Representation {
    return gzip && this.#gzip !== undefined ? this.#gzip : this.#plain;
  }

  /**
   * Compresses the body once, in the background, the first time a client
   * accepts gzip: until it is ready the plain body is sent, so no request
   * waits for a large listing to compress.
   */
  #compress(): void {
    if (this.#compressing || this.#bytes.byteLength < MIN_GZIP_BYTES) return;
    this.#compressing = true;
    gzipBytes(this.#bytes).then((packed) => {
      // The gzip body is another representation, so it gets its own tag.
      this.#gzip = new Representation(
        packed,
        `"${this.#digest}.gz"`,
        true,
        this.#scope,
      );
    }, () => {
      // Without compression the plain body keeps being sent.
    });
  }
}

/** The summaries a catalog lists now, with a lookup by pack name. */
interface Generation {
  /** The last list seen with these packs: a frozen one is the version. */
  summaries: readonly PackSummary[];
  byName: Map<string, PackSummary>;
  full: Promise<Listing> | undefined;
  /** Prepared selections by their sorted names, least recently used first. */
  selections: RecentMap<string, Promise<Listing>>;
  /** Prepared listings of exactly these packs, by their names in order. */
  subsets: RecentMap<string, Listing>;
  /** Listings of packs being prepared, so concurrent requests share one. */
  pending: Map<string, Promise<Listing>>;
}

/**
 * Prepares the listing answers once per change of the catalog's summaries,
 * the whole listing and each pack selection alike.
 */
export class ListingCache {
  #generation: Generation | undefined;
  readonly #scope: ListingScope;

  /**
   * @param scope Whether every requester gets the same listing.
   */
  constructor(scope: ListingScope = "public") {
    this.#scope = scope;
  }

  /**
   * The prepared listing of these summaries: every pack, or only `names`.
   *
   * @param summaries What the catalog lists now.
   * @param names The packs asked for, sorted and unique; every pack when
   * `undefined`.
   * @returns The prepared listing.
   */
  prepare(
    summaries: readonly PackSummary[],
    names?: readonly string[],
  ): Promise<PreparedListing> {
    const generation = this.#current(summaries);
    if (names === undefined) {
      generation.full ??= Listing.of(
        { packs: generation.summaries },
        this.#scope,
      );
      return generation.full;
    }
    const key = names.join(",");
    const kept = generation.selections.get(key);
    if (kept !== undefined) return kept;
    const packs = names.flatMap((name) => {
      const pack = generation.byName.get(name);
      return pack === undefined ? [] : [pack];
    });
    const listing = Listing.of({ packs }, this.#scope);
    generation.selections.set(key, listing);
    return listing;
  }

  /**
   * The installed packs a listing request may show: every pack, or those of
   * `names` that are installed, in the order {@linkcode prepare} lists them.
   *
   * @param summaries What the catalog lists now.
   * @param names The packs asked for, sorted and unique; every pack when
   * `undefined`.
   * @returns The packs, which the caller may narrow for one requester.
   */
  candidates(
    summaries: readonly PackSummary[],
    names?: readonly string[],
  ): readonly PackSummary[] {
    const generation = this.#current(summaries);
    if (names === undefined) return generation.summaries;
    return names.flatMap((name) => {
      const pack = generation.byName.get(name);
      return pack === undefined ? [] : [pack];
    });
  }

  /**
   * The prepared listing of exactly `packs`, shared by every request that
   * lists the same packs, whoever asks.
   *
   * @param summaries What the catalog lists now.
   * @param packs Some of {@linkcode candidates}' packs, in its order.
   * @returns The prepared listing.
   */
  prepareOf(
    summaries: readonly PackSummary[],
    packs: readonly PackSummary[],
  ): Promise<PreparedListing> {
    const generation = this.#current(summaries);
    if (packs.length === generation.summaries.length) {
      return this.prepare(summaries);
    }
    const key = packs.map((pack) => pack.name).join(",");
    const kept = generation.subsets.get(key) ?? generation.pending.get(key);
    if (kept !== undefined) return Promise.resolve(kept);
    const listing = Listing.of({ packs }, this.#scope).then((ready) => {
      generation.subsets.set(key, ready);
      return ready;
    }).finally(() => generation.pending.delete(key));
    generation.pending.set(key, listing);
    return listing;
  }

  #current(summaries: readonly PackSummary[]): Generation {
    const held = this.#generation;
    if (held !== undefined) {
      // A frozen list cannot change, so the same one lists the same packs:
      // one comparison, however many packs there are.
      if (summaries === held.summaries && Object.isFrozen(summaries)) {
        return held;
      }
      if (sameItems(summaries, held.summaries)) {
        held.summaries = summaries;
        return held;
      }
    }
    const generation: Generation = {
      summaries,
      byName: new Map(summaries.map((pack) => [pack.name, pack])),
      full: undefined,
      selections: new RecentMap({ maxEntries: MAX_SELECTIONS }),
      subsets: new RecentMap({
        maxEntries: MAX_SELECTIONS,
        maxBytes: MAX_SUBSET_BYTES,
        sizeOf: (listing) => listing.size,
      }),
      pending: new Map(),
    };
    this.#generation = generation;
    return generation;
  }
}

/**
 * Reads the `packs` parameter of a listing request: the pack names a
 * declaration needs, comma-separated. A parameter given more than once
 * names the packs of all of them.
 *
 * @param query The raw query without `?`.
 * @returns The names, sorted and unique; `undefined` when the request asks
 * for every pack; `null` when the parameter is malformed (escapes, an
 * empty or invalid name, none or more than {@linkcode MAX_LISTED_PACKS}).
 */
export function readPackNames(query: string): string[] | undefined | null {
  const values = queryParam(query, "packs");
  if (values === null) return null;
  if (values.length === 0) return undefined;
  // `packs=a&packs=b`, as many clients write a list, is `packs=a,b`:
  // reading only the first would list some of the packs asked for.
  const names = [...new Set(values.join(",").split(","))].sort();
  if (names.length > MAX_LISTED_PACKS) return null;
  for (const name of names) {
    if (!isPackName(name)) return null;
  }
  return names;
}

/**
 * Whether an `Accept-Encoding` header accepts gzip: `gzip` (or `*`) listed
 * without `q=0`, and not refused by name when `*` accepts it.
 *
 * @param header The header, or `null`.
 * @returns Whether a gzip body may be sent.
 */
export function acceptsGzip(header: string | null): boolean {
  if (header === null) return false;
  let named: boolean | undefined;
  let wildcard = false;
  for (const part of header.toLowerCase().split(",")) {
    const [coding = "", ...params] = part.split(";").map((s) => s.trim());
    const accepted = !params.some((param) => /^q=0(?:\.0{0,3})?$/.test(param));
    if (coding === "gzip" || coding === "x-gzip") named = accepted;
    else if (coding === "*") wildcard = accepted;
  }
  return named ?? wildcard;
}

async function gzipBytes(
  bytes: Uint8Array<ArrayBuffer>,
): Promise<Uint8Array<ArrayBuffer>> {
  const stream = new Blob([bytes]).stream().pipeThrough(
    new CompressionStream("gzip"),
  );
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/**
 * Whether two lists hold the same frozen summaries, so the serialized
 * listing still holds. Catalogs copy the list, not the (frozen) items;
 * items that are not frozen may have changed in place, so they never
 * count as the same.
 */
function sameItems(
  a: readonly PackSummary[],
  b: readonly PackSummary[] | undefined,
): boolean {
  if (b === undefined || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    if (a[i] !== b[i] || !Object.isFrozen(a[i])) return false;
  }
  return true;
}
