/**
 * Per-module responses prepared once per module version: the bytes, their
 * digest and one template response per variant. The bytes and digest of
 * an in-memory catalog (the on-disk one) are the ones discovery read and
 * computed, taken as they are; any other catalog's content is encoded and
 * hashed here, once per version, so `Repr-Digest` is always of the body
 * sent. Requests clone a template, which copies a short header list and
 * shares the bytes, instead of encoding, hashing and validating headers
 * every time; under `serveDelivery`, a bodyless answer is the template
 * itself.
 *
 * @module
 */

import { sha256Digest, toReprDigest } from "../catalog/digest.ts";
import { bytesOf } from "../catalog/in_memory_delivery.ts";
import type { AuthorizedDelivery } from "../protocol/mod.ts";
import { CORS_HEADERS } from "./_cors.ts";

/** Which response of a module to answer: one of {@linkcode VARIANT}. */
export type Variant = 0 | 1 | 2 | 3;

/** The responses of a module. */
export const VARIANT = Object.freeze(
  {
    /** 200 at the plain id URL. */
    plain: 0,
    /** 200 at a URL pinned to the current digest. */
    pinned: 1,
    /** 304 at the plain id URL. */
    plainNotModified: 2,
    /** 304 at a URL pinned to the current digest. */
    pinnedNotModified: 3,
  } as const,
);

/** A module version ready to answer, valid while its delivery is unchanged. */
export interface PreparedModule {
  /** The strong entity tag: the quoted digest. */
  readonly etag: string;
  /** SHA-256 of the body, `sha256-<base64>`. */
  readonly digest: string;
  /**
   * Answers one variant.
   *
   * @param variant Which response.
   * @param head Whether the request was `HEAD` (no body).
   * @returns A fresh response the caller owns, or, for a bodyless answer
   * when the cache shares them, the prepared response, which the caller
   * must hand on unchanged.
   */
  respond(variant: Variant, head: boolean): Response;
}

/** Options of {@linkcode ModuleResponseCache}. */
export interface ModuleResponseCacheOptions {
  /** `public` when every requester gets the same answer, else `private`. */
  scope: "public" | "private";
  /** The most module versions kept. */
  maxEntries: number;
  /**
   * The most bytes kept, added up: each entry's source text, its bytes and
   * every prepared 200 response's copy of them.
   */
  maxBytes: number;
  /**
   * Whether every response goes straight to `Deno.serve`: a bodyless
   * answer (`304`, `HEAD`) is then the prepared response itself rather
   * than a clone, since `Deno.serve` never changes one, and a `200` leaves
   * `Content-Length` to `Deno.serve`, which writes it from the body.
   */
  servedByDeno: boolean;
}

const SAFE_HEADER_VALUE = /^[\x21-\x7e]*$/;

class Entry implements PreparedModule {
  readonly etag: string;
  readonly digest: string;
  readonly source: AuthorizedDelivery;
  readonly bytes: Uint8Array<ArrayBuffer>;
  #scope: string;
  #servedByDeno: boolean;
  #headers: [string, string][] | undefined;
  #templates: (Response | undefined)[] = [];
  #onGrow: (entry: Entry, bytes: number) => void;
  /**
   * What the entry keeps alive, in bytes: the source text (as V8 stores
   * it: one byte a code unit when all are Latin-1, else two), the bytes,
   * and each prepared 200's
   * copy of them. The catalog may have let go of all of them: a pack
   * upgraded or removed leaves its entries here until they are pushed out.
   */
  heldBytes: number;

  constructor(
    source: AuthorizedDelivery,
    bytes: Uint8Array<ArrayBuffer>,
    digest: string,
    options: ModuleResponseCacheOptions,
    onGrow: (entry: Entry, bytes: number) => void,
  ) {
    this.source = source;
    this.bytes = bytes;
    this.digest = digest;
    this.etag = `"${digest}"`;
    this.#scope = options.scope;
    this.#servedByDeno = options.servedByDeno;
    this.#onGrow = onGrow;
    this.heldBytes = textBytes(source.content) + bytes.byteLength;
  }

  /** Whether a new delivery of the same id still matches this entry. */
  matches(delivery: AuthorizedDelivery): boolean {
    const source = this.source;
    if (source === delivery) return true;
    if (
      source.content !== delivery.content ||
      source.digest !== delivery.digest ||
      source.graphDigest !== delivery.graphDigest ||
      source.pack.name !== delivery.pack.name ||
      source.pack.version !== delivery.pack.version ||
      source.dependencyIds.length !== delivery.dependencyIds.length
    ) {
      return false;
    }
    for (let i = 0; i < source.dependencyIds.length; i++) {
      if (source.dependencyIds[i] !== delivery.dependencyIds[i]) return false;
    }
    return true;
  }

  respond(variant: Variant, head: boolean): Response {
    const slot = variant * 2 + (head ? 1 : 0);
    let template = this.#templates[slot];
    const bodyless = head || variant >= VARIANT.plainNotModified;
    if (template === undefined) {
      template = this.#build(variant, head);
      this.#templates[slot] = template;
      // The Response constructor copied the body.
      if (!bodyless) this.#onGrow(this, this.bytes.byteLength);
    }
    return bodyless && this.#servedByDeno ? template : template.clone();
  }

  #build(variant: Variant, head: boolean): Response {
    const pinned = variant === VARIANT.pinned ||
      variant === VARIANT.pinnedNotModified;
    const cacheControl = pinned
      ? `${this.#scope}, max-age=31536000, immutable`
      : `${this.#scope}, no-cache`;
    if (variant >= VARIANT.plainNotModified) {
      return new Response(null, {
        status: 304,
        headers: [
          ["etag", this.etag],
          ["cache-control", cacheControl],
          ...CORS_HEADERS.map(([k, v]): [string, string] => [k, v]),
        ],
      });
    }
    this.#headers ??= this.#bodyHeaders();
    // A HEAD answer has no body to count, so it always says the length.
    const length: [string, string][] = head || !this.#servedByDeno
      ? [["content-length", String(this.bytes.byteLength)]]
      : [];
    return new Response(head ? null : this.bytes, {
      status: 200,
      headers: [...this.#headers, ...length, ["cache-control", cacheControl]],
    });
  }

  #bodyHeaders(): [string, string][] {
    const { source } = this;
    const pack = `${source.pack.name}@${source.pack.version}`;
    return [
      ["content-type", "text/javascript; charset=utf-8"],
      ["repr-digest", toReprDigest(this.digest)],
      ["etag", this.etag],
      ["x-cordon-graph-digest", source.graphDigest],
      ...dependenciesHeader(source.dependencyIds),
      [
        "x-cordon-pack",
        SAFE_HEADER_VALUE.test(pack) ? pack : encodeURIComponent(pack),
      ],
      ["x-content-type-options", "nosniff"],
      ...CORS_HEADERS.map(([k, v]): [string, string] => [k, v]),
    ];
  }
}

/**
 * Keeps prepared responses by module id. An entry is reused only while the
 * catalog's delivery for that id is unchanged (same content, digests,
 * dependencies and pack), so a re-installed pack is picked up on its next
 * request. Oldest entries are dropped first when a bound is reached.
 */
export class ModuleResponseCache {
  #entries = new Map<string, Entry>();
  #bytes = 0;
  #options: ModuleResponseCacheOptions;

  /**
   * Creates an empty cache.
   *
   * @param options The cache scope and bounds.
   */
  constructor(options: ModuleResponseCacheOptions) {
    this.#options = options;
  }

  /**
   * The prepared responses of a delivery, from the cache or built now.
   *
   * @param delivery What the catalog delivered.
   * @returns The prepared module, or `undefined` when the catalog's digest
   * does not match the bytes it delivered (an inconsistent catalog).
   */
  prepare(
    delivery: AuthorizedDelivery,
  ): PreparedModule | undefined | Promise<PreparedModule | undefined> {
    const entry = this.#entries.get(delivery.moduleId);
    if (entry !== undefined && entry.matches(delivery)) return entry;
    const discovered = bytesOf(delivery);
    if (discovered !== undefined) {
      return this.#store(
        delivery.moduleId,
        new Entry(
          delivery,
          discovered,
          delivery.digest,
          this.#options,
          this.#grow,
        ),
      );
    }
    return this.#fill(delivery);
  }

  /** Encodes and hashes a delivery the catalog gave no bytes for. */
  async #fill(
    delivery: AuthorizedDelivery,
  ): Promise<PreparedModule | undefined> {
    const bytes = new TextEncoder().encode(delivery.content);
    const digest = await sha256Digest(bytes);
    if (digest !== delivery.digest) return undefined;
    return this.#store(
      delivery.moduleId,
      new Entry(delivery, bytes, digest, this.#options, this.#grow),
    );
  }

  #store(id: string, entry: Entry): Entry {
    const old = this.#entries.get(id);
    if (old !== undefined) {
      this.#entries.delete(id);
      this.#bytes -= old.heldBytes;
    }
    const { maxEntries, maxBytes } = this.#options;
    if (entry.heldBytes > maxBytes) return entry;
    while (
      this.#entries.size >= maxEntries ||
      this.#bytes + entry.heldBytes > maxBytes
    ) {
      if (!this.#dropOldest()) break;
    }
    this.#entries.set(id, entry);
    this.#bytes += entry.heldBytes;
    return entry;
  }

  /**
   * Counts what an entry took on since it was stored, and drops the oldest
   * entries past the bound.
   */
  #grow = (entry: Entry, bytes: number): void => {
    entry.heldBytes += bytes;
    // An entry pushed out, or never kept, is counted nowhere.
    const id = entry.source.moduleId;
    if (this.#entries.get(id) !== entry) return;
    this.#bytes += bytes;
    if (entry.heldBytes > this.#options.maxBytes) {
      // As #store keeps no entry larger than the bound: dropping the
      // others first would empty the cache and still not make room.
      this.#entries.delete(id);
      this.#bytes -= entry.heldBytes;
      return;
    }
    while (this.#bytes > this.#options.maxBytes) {
      if (!this.#dropOldest()) break;
    }
  };

  #dropOldest(): boolean {
    const oldest = this.#entries.entries().next().value;
    if (oldest === undefined) return false;
    this.#entries.delete(oldest[0]);
    this.#bytes -= oldest[1].heldBytes;
    return true;
  }
}

/**
 * The longest `X-Cordon-Dependencies` value sent. Node's fetch refuses an
 * answer whose head is over 16 KiB, so a module importing hundreds of
 * others would be undeliverable to it; such a module's header is left out
 * (its imports are in the listing, which clients read).
 */
const MAX_DEPENDENCIES_HEADER_BYTES = 8 * 1024;

function dependenciesHeader(ids: readonly string[]): [string, string][] {
  const value = ids.join(",");
  return value.length > MAX_DEPENDENCIES_HEADER_BYTES
    ? []
    : [["x-cordon-dependencies", value]];
}

/** What V8 holds for `text`: one byte a code unit if all are Latin-1. */
function textBytes(text: string): number {
  return /[\u0100-\uffff]/.test(text) ? 2 * text.length : text.length;
}
