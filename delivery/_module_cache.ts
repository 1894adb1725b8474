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
  /**
   * `public` when every requester gets the same answer, else `private`:
   * then even a pinned URL's answer is `no-cache`, revalidated each time.
   */
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

/**
 * The fields of a delivery an entry answers from, read once when it is
 * prepared: a catalog may change the object it answered afterwards (a new
 * version of the module written over the old one), which must then be
 * told from the entry, not become it.
 */
interface DeliveryFields {
  readonly moduleId: string;
  readonly content: string;
  readonly digest: string;
  readonly graphDigest: string;
  readonly packName: string;
  readonly packVersion: string;
  readonly dependencyIds: readonly string[];
}

function fieldsOf(delivery: AuthorizedDelivery): DeliveryFields {
  const { pack } = delivery;
  return {
    moduleId: delivery.moduleId,
    content: delivery.content,
    digest: delivery.digest,
    graphDigest: delivery.graphDigest,
    packName: pack.name,
    packVersion: pack.version,
    dependencyIds: [...delivery.dependencyIds],
  };
}

const { isFrozen } = Object;

/** Whether nothing of a delivery can change: it, its pack and its list. */
function unchangeable(delivery: AuthorizedDelivery): boolean {
  return isFrozen(delivery) && isFrozen(delivery.pack) &&
    isFrozen(delivery.dependencyIds);
}

class Entry implements PreparedModule {
  readonly etag: string;
  readonly digest: string;
  readonly fields: DeliveryFields;
  readonly bytes: Uint8Array<ArrayBuffer>;
  /**
   * The delivery prepared, when it cannot change (the disk catalog's are
   * frozen): the same object again then matches without a comparison.
   */
  #frozen: AuthorizedDelivery | undefined;
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
    fields: DeliveryFields,
    bytes: Uint8Array<ArrayBuffer>,
    digest: string,
    options: ModuleResponseCacheOptions,
    onGrow: (entry: Entry, bytes: number) => void,
  ) {
    this.#frozen = unchangeable(source) ? source : undefined;
    this.fields = fields;
    this.bytes = bytes;
    this.digest = digest;
    this.etag = `"${digest}"`;
    this.#scope = options.scope;
    this.#servedByDeno = options.servedByDeno;
    this.#onGrow = onGrow;
    this.heldBytes = textBytes(fields.content) + bytes.byteLength;
  }

  /** Whether a new delivery of the same id still matches this entry. */
  matches(delivery: AuthorizedDelivery): boolean {
    if (delivery === this.#frozen) return true;
    const fields = this.fields;
    if (
      fields.content !== delivery.content ||
      fields.digest !== delivery.digest ||
      fields.graphDigest !== delivery.graphDigest ||
      fields.packName !== delivery.pack.name ||
      fields.packVersion !== delivery.pack.version ||
      fields.dependencyIds.length !== delivery.dependencyIds.length
    ) {
      return false;
    }
    for (let i = 0; i < fields.dependencyIds.length; i++) {
      if (fields.dependencyIds[i] !== delivery.dependencyIds[i]) return false;
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
    // An answer that depends on who asks is never fresh: a browser's
    // cache keys it by URL alone, so an immutable copy would answer another
    // requester (and one whose access ended) without the policy asked.
    const cacheControl = pinned && this.#scope === "public"
      ? "public, max-age=31536000, immutable"
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
    const { fields } = this;
    const pack = `${fields.packName}@${fields.packVersion}`;
    return [
      ["content-type", "text/javascript; charset=utf-8"],
      ["repr-digest", toReprDigest(this.digest)],
      ["etag", this.etag],
      ["x-cordon-graph-digest", fields.graphDigest],
      ...dependenciesHeader(fields.dependencyIds),
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
      const fields = fieldsOf(delivery);
      return this.#store(
        new Entry(
          delivery,
          fields,
          discovered,
          fields.digest,
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
    const fields = fieldsOf(delivery);
    const bytes = new TextEncoder().encode(fields.content);
    const digest = await sha256Digest(bytes);
    if (digest !== fields.digest) return undefined;
    return this.#store(
      new Entry(delivery, fields, bytes, digest, this.#options, this.#grow),
    );
  }

  #store(entry: Entry): Entry {
    const id = entry.fields.moduleId;
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
    const id = entry.fields.moduleId;
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
