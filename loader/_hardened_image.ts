// This module is browser compatible.

/**
 * The hardened image: the memory of a freshly hardened engine of the
 * default build, made once by `deno task hardened-image` and shipped in
 * `_hardened_image_data.ts`, so a process's first engine writes it back
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
import { SETUP_SOURCE } from "./_hardening.ts";
import { HARDENED_IMAGE_DATA } from "./_hardened_image_data.ts";

/** Bump when what an image holds, or how it is taken, changes. */
export const IMAGE_FORMAT = 1;
/** The build the shipped image is made with, as `deno.json` pins it. */
export const IMAGE_VARIANT = "@jitl/quickjs-singlefile-browser-release-sync";

/** A byte range `[start, end)` of WebAssembly memory. */
export interface ImageRange {
  readonly start: number;
  readonly end: number;
}

/** A hardened image, decoded. */
export interface HardenedImage {
  /** The ranges of memory it holds: static data, then the heap. */
  readonly ranges: readonly ImageRange[];
  /** Their bytes, one array per range. */
  readonly bytes: readonly Uint8Array[];
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
 * build (`name@version`), {@linkcode digestText} of the hardening script,
 * the fork digest and volatile words, the memory's size, the ranges as
 * `[start, end]` pairs and their bytes, one after the other,
 * gzip-compressed, in base64.
 */
export type HardenedImageData = typeof HARDENED_IMAGE_DATA;

function mix(a: number, b: number, word: number): [number, number] {
  return [
    Math.imul(a ^ word, 0x01000193),
    Math.imul(b ^ word, 0x5bd1e995) ^ (b >>> 13),
  ];
}

/**
 * A 64-bit digest (two 32-bit FNV-1a style lanes) of the memory's size and
 * the 32-bit words of `parts`, the bytes of `ranges`, reading the words at
 * `volatileWords` (sorted addresses) as zero. Not a cryptographic hash: it
 * tells a different build or memory layout from the one an image was made
 * with, which no one chooses. `null` when a range is not word-aligned.
 */
export function digestFork(
  memoryBytes: number,
  ranges: readonly ImageRange[],
  parts: readonly Uint8Array[],
  volatileWords: readonly number[],
): string | null {
  let [a, b] = mix(0x811c9dc5, 0x2545f491, memoryBytes);
  let next = 0;
  for (let r = 0; r < ranges.length; r++) {
    const { start, end } = ranges[r]!;
    const part = parts[r]!;
    if (start % 4 !== 0 || end % 4 !== 0 || part.byteOffset % 4 !== 0) {
      return null;
    }
    if (part.length !== end - start) return null;
    const words = new Uint32Array(
      part.buffer,
      part.byteOffset,
      part.length / 4,
    );
    for (let i = 0; i < words.length; i++) {
      let word = words[i]!;
      if (volatileWords[next] === start + i * 4) {
        word = 0;
        next++;
      }
      [a, b] = mix(a, b, word);
    }
  }
  return (a >>> 0).toString(16).padStart(8, "0") +
    (b >>> 0).toString(16).padStart(8, "0");
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

/** The digest of a text's UTF-16 code units. */
export function digestText(text: string): string {
  let [a, b] = mix(0x811c9dc5, 0x2545f491, text.length);
  for (let i = 0; i < text.length; i++) [a, b] = mix(a, b, text.charCodeAt(i));
  return (a >>> 0).toString(16).padStart(8, "0") +
    (b >>> 0).toString(16).padStart(8, "0");
}

function fromBase64(text: string): Uint8Array {
  const native = (Uint8Array as { fromBase64?: (text: string) => Uint8Array })
    .fromBase64;
  if (typeof native === "function") return native(text);
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

async function gunzip(bytes: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([bytes as Uint8Array<ArrayBuffer>]).stream()
    .pipeThrough(new DecompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/**
 * Decodes an image, or `null` when it was made for another format or
 * another hardening script than this module's, or its bytes do not match
 * its ranges.
 */
export async function decodeImage(
  data: HardenedImageData,
): Promise<HardenedImage | null> {
  if (data.format !== IMAGE_FORMAT) return null;
  if (data.setupDigest !== digestText(SETUP_SOURCE)) return null;
  const all = await gunzip(fromBase64(data.gzipBase64));
  const ranges = data.ranges.map(([start, end]) => ({ start, end }));
  const total = ranges.reduce((sum, { start, end }) => sum + end - start, 0);
  if (all.byteLength !== total) return null;
  let offset = 0;
  const bytes = ranges.map(({ start, end }) => {
    const part = all.subarray(offset, offset + end - start);
    offset += end - start;
    return part;
  });
  return {
    ranges,
    bytes,
    memoryBytes: data.memoryBytes,
    forkDigest: data.forkDigest,
    volatileWords: data.volatileWords,
  };
}

let shipped: Promise<HardenedImage | null> | undefined;

/**
 * The shipped image when `variant` is the build it was made with, decoded
 * once per process; `null` for any other build.
 */
export function hardenedImageFor(
  variant: QuickJSSyncVariant,
): Promise<HardenedImage | null> {
  if (variant !== (singlefileVariant as unknown as QuickJSSyncVariant)) {
    return Promise.resolve(null);
  }
  shipped ??= decodeImage(HARDENED_IMAGE_DATA).catch(() => null);
  return shipped;
}
