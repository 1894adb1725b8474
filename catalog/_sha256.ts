// This module is browser compatible.

/**
 * SHA-256 in the caller's thread where the runtime has `node:crypto`
 * (Deno, Node): the one place that looks it up. `digest.ts` falls back to
 * `crypto.subtle` without it (browsers); the disk catalog, on Deno and
 * Node, hashes a module it reads on demand synchronously with it.
 *
 * @module
 */

/** The part of `node:crypto` hashing needs. */
interface NodeHashing {
  createHash(algorithm: "sha256"): NodeHash;
}

/** A `node:crypto` hash, as far as hashing needs one. */
interface NodeHash {
  update(data: Uint8Array): NodeHash;
  digest(): Uint8Array;
}

const { apply } = Reflect;

/**
 * `node:crypto` where the runtime has it: its SHA-256 is the same function
 * as Web Crypto's, about six times faster per call for the small files and
 * graph records discovery hashes by the hundred thousand, because it runs
 * in the caller's thread.
 */
const nodeHashing = (globalThis as {
  process?: { getBuiltinModule?: (id: string) => unknown };
}).process?.getBuiltinModule?.("node:crypto") as NodeHashing | undefined;

/**
 * A hash's `update` and `digest`, captured at import and called with
 * `Reflect.apply`: a module's digest is checked with them, and a host that
 * replaces them later (a wrapper that answers the digest the listing
 * gives) must not make other bytes pass the check. `createHash` is looked
 * up at each call, so a host may still count or trace hashing: what it
 * answers is a hash of this `node:crypto`, or the captured methods throw,
 * and a hash fed other bytes first answers another digest.
 */
const hashMethods = nodeHashing === undefined
  ? undefined
  : methodsOf(nodeHashing.createHash("sha256"));

function methodsOf(hash: NodeHash) {
  return { update: hash.update, digest: hash.digest };
}

/**
 * Base64 encoders, taken when this module loads: a digest is compared in
 * base64, so a page script that replaces `btoa` later (where the browser
 * has no `Uint8Array.prototype.toBase64`) must not answer the listing's
 * digest for other bytes.
 */
const nativeToBase64 = (Uint8Array.prototype as { toBase64?: () => string })
  .toBase64;
const encodeBase64 = globalThis.btoa;
const { fromCharCode } = String;

/** Standard base64 of bytes. */
export function toBase64(bytes: Uint8Array): string {
  if (nativeToBase64 !== undefined) return apply(nativeToBase64, bytes, []);
  let binary = "";
  for (let i = 0; i < bytes.length; i++) binary += fromCharCode(bytes[i]!);
  return apply(encodeBase64, globalThis, [binary]);
}

/**
 * SHA-256 of bytes, computed now, or `undefined` where the runtime has no
 * `node:crypto` (browsers).
 */
export function sha256Now(input: Uint8Array): Uint8Array | undefined {
  if (nodeHashing === undefined || hashMethods === undefined) return undefined;
  const { update, digest } = hashMethods;
  const hash = nodeHashing.createHash("sha256");
  apply(update, hash, [input]);
  const bytes: Uint8Array = apply(digest, hash, []);
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * The Subresource Integrity digest of bytes, computed now.
 *
 * @throws {Error} Where the runtime has no `node:crypto`.
 */
export function sha256DigestNow(input: Uint8Array): string {
  const hash = sha256Now(input);
  if (hash === undefined) {
    throw new Error(
      "Cannot hash synchronously: this runtime has no node:crypto",
    );
  }
  return `sha256-${toBase64(hash)}`;
}
