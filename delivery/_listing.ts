/**
 * The catalog listing response, rebuilt only when the catalog's summaries
 * change.
 *
 * @module
 */

import { sha256Digest } from "../catalog/digest.ts";
import type { CatalogListing, PackSummary } from "../protocol/mod.ts";
import { CORS_HEADERS } from "./_cors.ts";

/** The listing's current body and entity tag. */
export interface PreparedListing {
  /** The strong entity tag over the JSON body. */
  readonly etag: string;
  /**
   * Answers the listing.
   *
   * @param notModified Whether to answer 304.
   * @param head Whether the request was `HEAD` (no body).
   * @returns A fresh response the caller owns.
   */
  respond(notModified: boolean, head: boolean): Response;
}

class Listing implements PreparedListing {
  readonly etag: string;
  readonly json: string;
  #templates: [Response, Response, Response];

  constructor(json: string, bytes: Uint8Array<ArrayBuffer>, etag: string) {
    this.json = json;
    this.etag = etag;
    const common: [string, string][] = [
      ["etag", etag],
      ["cache-control", "no-cache"],
      ["x-content-type-options", "nosniff"],
      ...CORS_HEADERS.map(([k, v]): [string, string] => [k, v]),
    ];
    const headers: [string, string][] = [
      ["content-type", "application/json; charset=utf-8"],
      ["content-length", String(bytes.byteLength)],
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

/** Serializes the listing once per change of the catalog's summaries. */
export class ListingCache {
  #summaries: PackSummary[] | undefined;
  #listing: Listing | undefined;

  /**
   * The prepared listing of these summaries.
   *
   * @param summaries What the catalog lists now.
   * @returns The prepared listing.
   */
  async prepare(summaries: PackSummary[]): Promise<PreparedListing> {
    if (this.#listing !== undefined && sameItems(summaries, this.#summaries)) {
      return this.#listing;
    }
    const body: CatalogListing = { packs: summaries };
    const json = JSON.stringify(body);
    if (this.#listing === undefined || this.#listing.json !== json) {
      const bytes = new TextEncoder().encode(json);
      const etag = `"${await sha256Digest(bytes)}"`;
      this.#listing = new Listing(json, bytes, etag);
    }
    this.#summaries = summaries;
    return this.#listing;
  }
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
