// This module is browser compatible.

/**
 * SHA-256 digests in the two forms cordon speaks: Subresource Integrity form
 * (`sha256-<base64>`) in data, and RFC 9530 form (`sha-256=:<base64>:`) in
 * `Repr-Digest` headers; and the opaque module ids derived from a pack's
 * name, version and file. Hashes with `node:crypto` where the runtime has it
 * and with `crypto.subtle` elsewhere (browsers).
 *
 * @module
 */

import { CordonError } from "../protocol/cordon_error.ts";
import { bytesDetached, isBuffer, isDetached, isUint8Array } from "./_bytes.ts";
import { sha256Now, toBase64 } from "./_sha256.ts";

const SRI_SHA256 = /^sha256-([A-Za-z0-9+/]{43}=)$/;
const SF_BYTES = /^:([A-Za-z0-9+/]*={0,2}):$/;
const MODULE_ID_LENGTH = 22;

/**
 * UTF-8 encoding, bound when this module loads: a cached source is checked
 * against its digest by its own bytes, whatever a page script later puts
 * in `TextEncoder.prototype.encode`.
 */
const encodeUtf8: (text: string) => Uint8Array<ArrayBuffer> = TextEncoder
  .prototype.encode.bind(new TextEncoder());

/**
 * Web Crypto, taken when this module loads so a script that replaces
 * `crypto.subtle.digest` later cannot answer for it; `undefined` on a page
 * that is not a secure context, which browsers give no `crypto.subtle`.
 */
const subtle: SubtleCrypto | undefined = globalThis.crypto?.subtle;
const subtleDigest = subtle?.digest;
const { apply } = Reflect;

/** Without a digest no module can be checked, so nothing may go on. */
function webCryptoUnavailable(): CordonError {
  return new CordonError(
    "WEB_CRYPTO_UNAVAILABLE",
    "Cannot check the digests of sandbox modules: this page has no Web Crypto (crypto.subtle), which browsers give only to secure contexts; serve the page over https, or from localhost while developing",
  );
}

/**
 * The bytes to hash: a string's UTF-8, a `Uint8Array` as it is, a buffer's
 * whole content. Bytes whose buffer was transferred are refused rather
 * than hashed as no bytes, and so is a view of another kind, which
 * `new Uint8Array()` would read as no bytes (a `DataView`) or as each
 * element's low byte.
 */
function bytesToHash(data: Uint8Array | ArrayBuffer | string): Uint8Array {
  if (typeof data === "string") return encodeUtf8(data);
  // Only an empty view can be detached: the common case asks no more.
  if (data instanceof Uint8Array && data.byteLength !== 0) return data;
  if (isUint8Array(data) || isBuffer(data)) {
    if (isDetached(data)) throw bytesDetached("compute a digest");
    return data instanceof Uint8Array ? data : new Uint8Array(data);
  }
  throw new TypeError(
    "Cannot compute a digest: pass a Uint8Array, an ArrayBuffer or a string; wrap another view's bytes with new Uint8Array(view.buffer, view.byteOffset, view.byteLength)",
  );
}

async function sha256Bytes(
  data: Uint8Array | ArrayBuffer | string,
): Promise<Uint8Array> {
  const input = bytesToHash(data);
  const now = sha256Now(input);
  if (now !== undefined) return now;
  // Copy views onto shared or resizable buffers so subtle.digest accepts them.
  const view = input.buffer instanceof ArrayBuffer
    ? input
    : new Uint8Array(input);
  if (subtleDigest === undefined) throw webCryptoUnavailable();
  return new Uint8Array(
    await apply(subtleDigest, subtle, ["SHA-256", view as BufferSource]),
  );
}

/**
 * Computes the SHA-256 digest of bytes, or of a string's UTF-8 bytes, in
 * Subresource Integrity form. The bytes are read during the call, before
 * it returns its promise: changing them afterwards does not change the
 * digest.
 *
 * @param data The bytes (a view onto a shared or resizable buffer too), or
 * a string to encode as UTF-8.
 * @returns The digest as `sha256-<base64>`.
 * @throws {CordonError} `WEB_CRYPTO_UNAVAILABLE` in a browser page that is
 * not a secure context (served over plain http), which has no Web Crypto;
 * `BYTES_DETACHED` when the bytes' buffer was transferred or detached.
 * @throws {TypeError} When `data` is no `Uint8Array`, buffer or string
 * (a `DataView`, another typed array).
 *
 * @example
 * ```ts
 * import { sha256Digest } from "@cordon/cordon/catalog";
 * import assert from "node:assert/strict";
 *
 * assert.equal(
 *   await sha256Digest(""),
 *   "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",
 * );
 * ```
 */
export async function sha256Digest(
  data: Uint8Array | ArrayBuffer | string,
): Promise<string> {
  return `sha256-${toBase64(await sha256Bytes(data))}`;
}

/**
 * Turns a Subresource Integrity digest into an RFC 9530 `Repr-Digest` value.
 *
 * @param sri A digest as `sha256-<base64>`.
 * @returns The header value `sha-256=:<base64>:`.
 * @throws {TypeError} When `sri` is not a SHA-256 digest in SRI form.
 *
 * @example
 * ```ts
 * import { toReprDigest } from "@cordon/cordon/catalog";
 * import assert from "node:assert/strict";
 *
 * assert.equal(
 *   toReprDigest("sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="),
 *   "sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:",
 * );
 * ```
 */
export function toReprDigest(sri: string): string {
  const match = SRI_SHA256.exec(sri);
  if (match === null) {
    throw new TypeError(
      "Cannot convert the digest: expected sha256-<base64> of 32 bytes",
    );
  }
  return `sha-256=:${match[1]}:`;
}

function decodesTo32Bytes(base64: string): boolean {
  try {
    return atob(base64).length === 32;
  } catch {
    return false;
  }
}

/**
 * Reads the SHA-256 member of an RFC 9530 `Repr-Digest` (or
 * `Content-Digest`) header. Other algorithms are ignored; when `sha-256`
 * appears more than once the last member wins, as in any structured-field
 * dictionary. Members it cannot read are skipped unless they claim to be
 * `sha-256`.
 *
 * @param header The header value, such as `sha-512=:...:, sha-256=:...:`.
 * @returns The digest in SRI form, or `undefined` when the header has no
 * well-formed `sha-256` member.
 *
 * @example
 * ```ts
 * import { parseReprDigest } from "@cordon/cordon/catalog";
 * import assert from "node:assert/strict";
 *
 * assert.equal(
 *   parseReprDigest("md5=:AAAA:, sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:"),
 *   "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",
 * );
 * assert.equal(parseReprDigest("sha-512=:AAAA:"), undefined);
 * ```
 */
export function parseReprDigest(
  header: string | null | undefined,
): string | undefined {
  if (typeof header !== "string") return undefined;
  let found: string | undefined;
  for (const rawMember of header.split(",")) {
    const member = rawMember.trim();
    const equals = member.indexOf("=");
    const key = equals === -1 ? member : member.slice(0, equals);
    if (key !== "sha-256") continue;
    if (equals === -1) return undefined;
    // Drop structured-field parameters (`;name=value`) after the value.
    const value = member.slice(equals + 1).split(";")[0]!.trim();
    const bytes = SF_BYTES.exec(value);
    if (bytes === null || !decodesTo32Bytes(bytes[1]!)) return undefined;
    const sri = `sha256-${bytes[1]}`;
    if (!SRI_SHA256.test(sri)) return undefined;
    found = sri;
  }
  return found;
}

/**
 * Derives the opaque, URL-safe, stable id of one module of one pack
 * version: the first 22 characters of the base64url SHA-256 of
 * `${packName}@${version}:${path}`. It never contains the path itself.
 *
 * @param packName The pack name, such as `@acme/math`.
 * @param version The pack version, such as `1.2.0`.
 * @param path The module's file inside the pack, such as `./lib/round.js`.
 * @returns A 22-character id of `A-Z a-z 0-9 _ -`.
 * @throws {CordonError} `WEB_CRYPTO_UNAVAILABLE` in a browser page that is
 * not a secure context (served over plain http), which has no Web Crypto.
 *
 * @example
 * ```ts
 * import { moduleIdFor } from "@cordon/cordon/catalog";
 * import assert from "node:assert/strict";
 *
 * const id = await moduleIdFor("@acme/math", "1.2.0", "./index.js");
 * assert.match(id, /^[A-Za-z0-9_-]{22}$/);
 * assert.equal(id, await moduleIdFor("@acme/math", "1.2.0", "./index.js"));
 * assert.notEqual(id, await moduleIdFor("@acme/math", "1.2.1", "./index.js"));
 * ```
 */
export async function moduleIdFor(
  packName: string,
  version: string,
  path: string,
): Promise<string> {
  const hash = await sha256Bytes(`${packName}@${version}:${path}`);
  return toBase64(hash).replaceAll("+", "-").replaceAll("/", "_").slice(
    0,
    MODULE_ID_LENGTH,
  );
}
