/**
 * Writes `loader/_hardened_image_data.js`: the memory of a freshly hardened
 * engine of the loader's default build, which engines restore instead of
 * evaluating the hardening script (see `loader/_hardened_image.ts`). With
 * `--check` it writes nothing and exits 1 when the committed image is not
 * what this checkout makes.
 *
 * Two hardenings of the same build differ only in a few bytes QuickJS
 * derives from the clock (a random seed the hardened context no longer
 * uses): the check finds them by making the image twice, and compares
 * every other byte.
 *
 * Usage: `deno task hardened-image [--check]`
 *
 * @module
 */

import type { QuickJSSyncVariant } from "quickjs-emscripten-core";
import singlefileVariant from "@jitl/quickjs-singlefile-browser-release-sync";
import {
  createEngine,
  type MemoryRange,
  type Recording,
} from "../loader/_engine.ts";
import {
  decodeImage,
  digestFork,
  type HardenedImage,
  IMAGE_FORMAT,
  IMAGE_VARIANT,
  type ImageRun,
  setupDigest,
} from "../loader/_hardened_image.ts";

const variant = singlefileVariant as unknown as QuickJSSyncVariant;
const TARGET = new URL("../loader/_hardened_image_data.js", import.meta.url);

/** The build's `name@version`, as `deno.json` pins it. */
async function pinnedVariant(): Promise<string> {
  const config = JSON.parse(
    await Deno.readTextFile(new URL("../deno.json", import.meta.url)),
  ) as { imports: Record<string, string> };
  const specifier = config.imports[IMAGE_VARIANT];
  if (specifier === undefined) {
    throw new Error(`deno.json lacks ${IMAGE_VARIANT}`);
  }
  return specifier.replace(/^npm:/, "");
}

/** Hardens a context, keeping its memory at the fork point and once hardened. */
async function record(): Promise<Recording> {
  let recording: Recording | null = null;
  await createEngine(variant, undefined, {
    record: (made) => (recording = made),
  });
  if (recording === null) throw new Error("The engine recorded nothing");
  return recording;
}

/**
 * Changed words closer than this are written as one run: fewer runs for a
 * few unchanged bytes more.
 */
const RUN_GAP_BYTES = 64;

/** The runs of `hardened` that differ from `fork`, word by word, in `ranges`. */
function changedRuns(
  ranges: readonly MemoryRange[],
  fork: Uint8Array,
  hardened: Uint8Array,
): ImageRun[] {
  const runs: ImageRun[] = [];
  for (const { start, end } of ranges) {
    let runStart = -1;
    let runEnd = -1;
    for (let at = start; at < end; at += 4) {
      let same = true;
      for (let i = at; i < at + 4; i++) same &&= fork[i] === hardened[i];
      if (same) continue;
      if (runStart >= 0 && at - runEnd > RUN_GAP_BYTES) {
        runs.push({ start: runStart, bytes: hardened.slice(runStart, runEnd) });
        runStart = -1;
      }
      if (runStart < 0) runStart = at;
      runEnd = at + 4;
    }
    if (runStart >= 0) {
      runs.push({ start: runStart, bytes: hardened.slice(runStart, runEnd) });
    }
  }
  return runs;
}

function slices(
  memory: Uint8Array,
  ranges: readonly MemoryRange[],
): Uint8Array[] {
  return ranges.map(({ start, end }) => memory.slice(start, end));
}

/**
 * Both words of the 8-byte value a differing word belongs to. QuickJS seeds
 * a context's 64-bit random state from the clock in microseconds: hardenings
 * a few milliseconds apart differ only in its low word, but the high word
 * changes every 2^32 µs (about 72 minutes), and an image that named the low
 * word alone would match no fork point after that.
 */
function wholeSeed(address: number): number[] {
  const low = address - (address % 8);
  return [low, low + 4];
}

/** How many hardenings the volatile words are found from, a few ms apart. */
const RECORDINGS = 3;

/**
 * Makes the image: hardens a context a few times, a few milliseconds
 * apart, and takes the words that differ between them at the fork point as
 * the volatile ones.
 */
export async function makeImage(): Promise<HardenedImage> {
  const recordings: Recording[] = [];
  for (let i = 0; i < RECORDINGS; i++) {
    if (i > 0) await new Promise((resolve) => setTimeout(resolve, 5));
    recordings.push(await record());
  }
  const [first] = recordings as [Recording];
  const { ranges } = first;
  if (
    ranges.length !== 2 || first.fork.length !== first.hardened.length ||
    recordings.some((other) =>
      JSON.stringify(other.ranges) !== JSON.stringify(ranges)
    )
  ) {
    throw new Error(
      "The hardening grew the memory, or two hardenings differ in layout: an image cannot hold it",
    );
  }
  const fork = slices(first.fork, ranges);
  const volatileWords = [
    ...new Set(
      recordings.slice(1).flatMap((other) =>
        differingWords(ranges, fork, slices(other.fork, ranges))
          .flatMap(wholeSeed)
      ),
    ),
  ].sort((a, b) => a - b);
  const forkDigest = await digestFork(
    first.fork.length,
    ranges,
    fork,
    volatileWords,
  );
  if (forkDigest === null) throw new Error("The ranges are not word-aligned");
  return {
    ranges,
    runs: changedRuns(ranges, first.fork, first.hardened),
    memoryBytes: first.fork.length,
    forkDigest,
    volatileWords,
  };
}

function joined(parts: readonly Uint8Array[]): Uint8Array {
  const all = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    all.set(part, offset);
    offset += part.length;
  }
  return all;
}

function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

async function render(image: HardenedImage): Promise<string> {
  const data = {
    format: IMAGE_FORMAT,
    variant: await pinnedVariant(),
    setupDigest: await setupDigest(),
    forkDigest: image.forkDigest,
    volatileWords: image.volatileWords,
    hostLanguage: globalThis.navigator?.language ?? null,
    memoryBytes: image.memoryBytes,
    ranges: image.ranges.map(({ start, end }) => [start, end]),
    runs: image.runs.map(({ start, bytes }) => [start, bytes.length]),
    bytesBase64: toBase64(joined(image.runs.map(({ bytes }) => bytes))),
  };
  // Written as `deno fmt` writes it: arrays with a space after each comma.
  const text = (value: unknown): string =>
    Array.isArray(value)
      ? `[${value.map(text).join(", ")}]`
      : JSON.stringify(value);
  // Laid out as `deno fmt` does: a line too long for one puts an array's
  // elements on lines of their own, a string on the next line.
  const field = (name: string, value: unknown) => {
    const line = `  ${name}: ${text(value)},`;
    if (line.length <= 80) return `${line}\n`;
    if (!Array.isArray(value)) return `  ${name}:\n    ${text(value)},\n`;
    return `  ${name}: [\n${
      value.map((item) => `    ${text(item)},\n`).join("")
    }  ],\n`;
  };
  return `// This module is browser compatible.
// @ts-self-types="./_hardened_image_data.d.ts"
// Generated by \`deno task hardened-image\` from the build and the hardening
// script; \`deno task hardened-image --check\` tells whether it is current.

/** The shipped hardened image (see \`_hardened_image.ts\`). */
export const HARDENED_IMAGE_DATA = {
${Object.entries(data).map(([name, value]) => field(name, value)).join("")}};
`;
}

/** The addresses of the 32-bit words where two copies of `ranges` differ. */
export function differingWords(
  ranges: readonly MemoryRange[],
  a: readonly Uint8Array[],
  b: readonly Uint8Array[],
): number[] {
  const addresses: number[] = [];
  ranges.forEach(({ start, end }, r) => {
    const left = a[r]!;
    const right = b[r]!;
    for (let offset = 0; offset < end - start; offset += 4) {
      for (let i = offset; i < offset + 4; i++) {
        if (left[i] !== right[i]) {
          addresses.push(start + offset);
          break;
        }
      }
    }
  });
  return addresses;
}

/** What makes the committed image stale, if anything. */
async function staleness(): Promise<string | null> {
  // Imported here, so that the image can be written where there is none.
  const { HARDENED_IMAGE_DATA } = await import(
    "../loader/_hardened_image_data.js"
  );
  const committed = await decodeImage(HARDENED_IMAGE_DATA);
  if (committed === null) {
    return "it was made for another format or hardening script";
  }
  if (HARDENED_IMAGE_DATA.variant !== await pinnedVariant()) {
    return `it was made with ${HARDENED_IMAGE_DATA.variant}`;
  }
  const language = globalThis.navigator?.language ?? null;
  if (HARDENED_IMAGE_DATA.hostLanguage !== language) {
    // Emscripten writes it into the memory before the fork point.
    return `it was made where navigator.language is ${HARDENED_IMAGE_DATA.hostLanguage}, and here it is ${language}`;
  }
  const [first, second] = [await record(), await record()];
  const fresh = await makeImage();
  const same = (a: HardenedImage, b: HardenedImage) =>
    a.forkDigest === b.forkDigest && a.memoryBytes === b.memoryBytes &&
    JSON.stringify(a.ranges) === JSON.stringify(b.ranges) &&
    JSON.stringify(a.volatileWords) === JSON.stringify(b.volatileWords);
  if (!same(committed, fresh)) return "the build's memory layout changed";
  // The committed runs written over a fresh fork point must give a fresh
  // hardening, but for the words two hardenings differ in.
  const restored = first.fork.slice();
  for (const run of committed.runs) restored.set(run.bytes, run.start);
  const { ranges } = committed;
  const volatile = new Set(
    differingWords(
      ranges,
      slices(first.hardened, ranges),
      slices(second.hardened, ranges),
    ),
  );
  const changed = differingWords(
    ranges,
    slices(restored, ranges),
    slices(first.hardened, ranges),
  ).filter((address) => !volatile.has(address));
  return changed.length === 0
    ? null
    : `${changed.length} words differ from a fresh hardening`;
}

if (import.meta.main) {
  if (Deno.args.includes("--check")) {
    const stale = await staleness();
    if (stale !== null) {
      console.error(
        `loader/_hardened_image_data.js is out of date (${stale}): run deno task hardened-image`,
      );
      Deno.exit(1);
    }
    console.log("loader/_hardened_image_data.js is current");
  } else {
    await Deno.writeTextFile(TARGET, await render(await makeImage()));
    console.log("wrote loader/_hardened_image_data.js");
  }
}
