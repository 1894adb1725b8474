// This module is browser compatible.

/**
 * The hardened image: the memory of a freshly hardened engine of the
 * default build, made once by `deno task hardened-image` and shipped in
 * `_hardened_image_data.js`, so a process's first engine writes it back
 * instead of evaluating the hardening script, which in a fresh process
 * costs mostly V8 compiling QuickJS's WebAssembly functions on first use.
 *
 * An engine restores the image only when everything it depends on is the
 * same as when it was made, and hardens its context itself otherwise:
 *
 * - the format, the build (the default variant object, whose package
 *   version the image names) and the hardening script (its digest);
 * - the memory at the fork point, where making the image starts
 *   evaluating the hardening script: an engine gets there by the same
 *   calls (runtime, context, stack probe, console function, holder
 *   object), and the digest of its static data and heap there must be the
 *   image's. That covers the build's data, every pointer the host holds
 *   (runtime, context, handles) and the ids of host functions, which live
 *   in that memory.
 *
 * @module
 */

import type { QuickJSSyncVariant } from "quickjs-emscripten-core";
import singlefileVariant from "@jitl/quickjs-singlefile-browser-release-sync";
import { SETUP_SCRIPTS } from "./_hardening.ts";

const { apply } = Reflect;

/**
 * What decides whether an image fits and what it writes, taken when this
 * module loads: a page script that runs later cannot change them.
 */
const subtle: SubtleCrypto | undefined = globalThis.crypto?.subtle;
const subtleDigest = subtle?.digest;
const encodeUtf8: (text: string) => Uint8Array<ArrayBuffer> = TextEncoder
  .prototype.encode.bind(new TextEncoder());
const nativeFromBase64 = (Uint8Array as {
  fromBase64?: (text: string) => Uint8Array;
}).fromBase64;
const decodeBase64 = globalThis.atob;
const { charCodeAt } = String.prototype;

/** Bump when what an image holds, or how it is taken, changes. */
export const IMAGE_FORMAT = 4;
/** The build the shipped image is made with, as `deno.json` pins it. */
export const IMAGE_VARIANT = "@jitl/quickjs-singlefile-browser-release-sync";

/** A byte range `[start, end)` of WebAssembly memory. */
export interface ImageRange {
  readonly start: number;
  readonly end: number;
}

/** Bytes the hardening wrote, and where. */
export interface ImageRun {
  /** The address of the first byte. */
  readonly start: number;
  readonly bytes: Uint8Array;
}

/** A hardened image, decoded. */
export interface HardenedImage {
  /** The ranges of memory that hold state: static data, then the heap. */
  readonly ranges: readonly ImageRange[];
  /**
   * What the hardening changed in those ranges, from the fork point on:
   * writing these over memory that is the fork point's gives the
   * hardened memory.
   */
  readonly runs: readonly ImageRun[];
  /** The memory's size when the image was taken, in bytes. */
  readonly memoryBytes: number;
  /** The digest of the same ranges at the fork point. */
  readonly forkDigest: string;
  /**
   * The addresses of the words the fork digest reads as zero: the few that
   * differ between any two fresh engines of the build, since QuickJS seeds
   * them from the clock.
   */
  readonly volatileWords: readonly number[];
}

/**
 * A hardened image as the generated module holds it: the format, the
 * build (`name@version`), {@linkcode setupDigest} of the hardening scripts,
 * the fork digest and volatile words, the maker's `navigator.language`, the
 * memory's size, the ranges as `[start, end]` pairs, the runs as
 * `[start, length]` pairs and their bytes, one after the other, in base64
 * (uncompressed: decoding base64 is cheaper than the first use of a
 * decompression stream).
 *
 * The module is JavaScript with this type beside it, not TypeScript: Deno
 * loads a TypeScript module through its transpile cache, which for 380 KB
 * of data cost a fresh process about 4 ms more than the same module as
 * JavaScript.
 */
export interface HardenedImageData {
  readonly format: number;
  readonly variant: string;
  readonly setupDigest: string;
  readonly forkDigest: string;
  readonly volatileWords: readonly number[];
  /**
   * The maker's `navigator.language` (`null` where it had none). Emscripten
   * writes it into the memory as `LANG` before the fork point, so the fork
   * digest matches only on a host whose `navigator.language` is this one;
   * the runtime check reads the digest, not this field.
   */
  readonly hostLanguage: string | null;
  readonly memoryBytes: number;
  readonly ranges: readonly (readonly [number, number])[];
  readonly runs: readonly (readonly [number, number])[];
  readonly bytesBase64: string;
}

function hex(bytes: ArrayBuffer): string {
  return Array.from(
    new Uint8Array(bytes),
    (byte) => byte.toString(16).padStart(2, "0"),
  ).join("");
}

/**
 * Web Crypto's SHA-256, or `null` where there is none (an insecure page).
 * Its verdict decides whether an engine writes the image over its memory,
 * so it is computed with the digest taken when this module loaded: a page
 * script that replaces `crypto.subtle.digest` later cannot answer the fork
 * digest for memory that is not the fork point's.
 */
async function sha256(bytes: Uint8Array<ArrayBuffer>): Promise<string | null> {
  if (subtle === undefined || subtleDigest === undefined) return null;
  return hex(await apply(subtleDigest, subtle, ["SHA-256", bytes]));
}

/**
 * The SHA-256 of the memory's size (4 bytes, little-endian) and `parts`, the
 * bytes of `ranges`, with the words at `volatileWords` (addresses) read as
 * zero. `null` when a range is not word-aligned, or the runtime has no Web
 * Crypto (an engine then hardens its context itself).
 */
export function digestFork(
  memoryBytes: number,
  ranges: readonly ImageRange[],
  parts: readonly Uint8Array[],
  volatileWords: readonly number[],
): Promise<string | null> {
  const total = parts.reduce((sum, part) => sum + part.length, 0);
  const bytes = new Uint8Array(4 + total);
  new DataView(bytes.buffer).setUint32(0, memoryBytes, true);
  let offset = 4;
  for (let r = 0; r < ranges.length; r++) {
    const { start, end } = ranges[r]!;
    const part = parts[r]!;
    if (start % 4 !== 0 || end % 4 !== 0 || part.length !== end - start) {
      return Promise.resolve(null);
    }
    bytes.set(part, offset);
    for (const address of volatileWords) {
      if (address >= start && address < end) {
        bytes.fill(0, offset + address - start, offset + address - start + 4);
      }
    }
    offset += part.length;
  }
  return sha256(bytes);
}

/** The bytes of `ranges` of `memory`, as views, or `null` when one lies outside it. */
export function viewRanges(
  memory: WebAssembly.Memory,
  ranges: readonly ImageRange[],
): Uint8Array[] | null {
  const size = memory.buffer.byteLength;
  if (ranges.some(({ start, end }) => start > end || end > size)) return null;
  return ranges.map(({ start, end }) =>
    new Uint8Array(memory.buffer, start, end - start)
  );
}

/** The SHA-256 of a text's UTF-8 bytes, or `null` without Web Crypto. */
function digestText(text: string): Promise<string | null> {
  return sha256(encodeUtf8(text));
}

/**
 * The SHA-256 of the hardening scripts, as JSON, or `null` without Web
 * Crypto.
 */
export function setupDigest(): Promise<string | null> {
  return digestText(JSON.stringify(SETUP_SCRIPTS));
}

function fromBase64(text: string): Uint8Array {
  if (typeof nativeFromBase64 === "function") {
    return apply(nativeFromBase64, Uint8Array, [text]);
  }
  const binary: string = apply(decodeBase64, globalThis, [text]);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) {
    bytes[i] = apply(charCodeAt, binary, [i]);
  }
  return bytes;
}

/**
 * Decodes an image, or `null` when it was made for another format or
 * another hardening script than this module's, or its runs do not match
 * its bytes or lie outside its ranges.
 */
export async function decodeImage(
  data: HardenedImageData,
): Promise<HardenedImage | null> {
  if (data.format !== IMAGE_FORMAT) return null;
  if (data.setupDigest !== await setupDigest()) return null;
  const all = fromBase64(data.bytesBase64);
  const ranges = data.ranges.map(([start, end]) => ({ start, end }));
  const total = data.runs.reduce((sum, [, length]) => sum + length, 0);
  if (all.byteLength !== total) return null;
  let offset = 0;
  const runs = data.runs.map(([start, length]) => {
    const bytes = all.subarray(offset, offset + length);
    offset += length;
    return { start, bytes };
  });
  const inside = runs.every(({ start, bytes }) =>
    ranges.some((range) =>
      start >= range.start && start + bytes.length <= range.end
    )
  );
  if (!inside) return null;
  return {
    ranges,
    runs,
    memoryBytes: data.memoryBytes,
    forkDigest: data.forkDigest,
    volatileWords: data.volatileWords,
  };
}

let shipped: Promise<HardenedImage | null> | undefined;

/**
 * The shipped image when `variant` is the build it was made with, decoded
 * once per process; `null` for any other build, or when the image's module
 * could not be loaded.
 *
 * @throws What decoding the image threw: a fault of cordon's decoding.
 */
export function hardenedImageFor(
  variant: QuickJSSyncVariant,
): Promise<HardenedImage | null> {
  if (variant !== (singlefileVariant as unknown as QuickJSSyncVariant)) {
    return Promise.resolve(null);
  }
  // Imported here, not with the loader: its 1.1 MB are evaluated while the
  // WebAssembly module compiles, and not at all for another build.
  // Only a module that could not be loaded (a bundle's chunk that did not
  // arrive) leaves an engine to harden its context itself: a throw of the
  // decoding is a fault of cordon, and the engine's creation fails with it.
  shipped ??= import("./_hardened_image_data.js").then(
    ({ HARDENED_IMAGE_DATA }) => decodeImage(HARDENED_IMAGE_DATA),
    () => null,
  );
  return shipped;
}
