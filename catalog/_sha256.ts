// This module is browser compatible.

/**
 * SHA-256 in the caller's thread where the runtime has `node:crypto`
 * (Deno, Node): the one place that looks it up. `digest.ts` falls back to
 * `crypto.subtle` without it (browsers); the disk catalog, which runs in
 * Deno only, hashes a module it reads on demand synchronously with it.
 *
 * @module
 */

/** The part of `node:crypto` hashing needs. */
interface NodeHashing {
  createHash(algorithm: "sha256"): {
    update(data: Uint8Array): { digest(): Uint8Array };
  };
}

/**
 * `node:crypto` where the runtime has it: its SHA-256 is the same function
 * as Web Crypto's, about six times faster per call for the small files and
 * graph records discovery hashes by the hundred thousand, because it runs
 * in the caller's thread.
 */
const nodeHashing = (globalThis as {
  process?: { getBuiltinModule?: (id: string) => unknown };
}).process?.getBuiltinModule?.("node:crypto") as NodeHashing | undefined;

const nativeToBase64 = (Uint8Array.prototype as { toBase64?: () => string })
  .toBase64;

/** Standard base64 of bytes. */
export function toBase64(bytes: Uint8Array): string {
  if (nativeToBase64 !== undefined) return nativeToBase64.call(bytes);
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/**
 * SHA-256 of bytes, computed now, or `undefined` where the runtime has no
 * `node:crypto` (browsers).
 */
export function sha256Now(input: Uint8Array): Uint8Array | undefined {
  if (nodeHashing === undefined) return undefined;
  const hash = nodeHashing.createHash("sha256").update(input).digest();
  return new Uint8Array(hash.buffer, hash.byteOffset, hash.byteLength);
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
