import { createWebBlob } from "./web_blob.ts";
import { createWebText } from "./web_text.ts";
import {
  assertSameAsyncAnswers,
  outcome,
  type Random,
  seeded,
} from "./_fuzz_test.ts";

const text = createWebText();
const realm = createWebBlob(text.TextEncoder, text.TextDecoder);

/** The constructors one side builds with. */
interface Side {
  Blob: typeof Blob;
  File: typeof File;
}

// ---- A plan of a blob: its parts, options and the slices taken of it ----

type Part =
  | { kind: "string"; value: string }
  | { kind: "bytes"; view: string; bytes: number[]; offset: number }
  | { kind: "buffer"; bytes: number[] }
  | { kind: "blob"; of: BlobPlan }
  | { kind: "other"; value: unknown };

interface BlobPlan {
  parts: Part[];
  type: unknown;
  endings: unknown;
  /** A File's name and last modified time, or null for a Blob. */
  file: { name: unknown; lastModified: unknown } | null;
}

type SliceArgs = unknown[];

interface BlobCase {
  plan: BlobPlan;
  slices: SliceArgs[];
}

const STRINGS = [
  "",
  "a",
  "\u00e9",
  "\u20ac",
  "\ud83d\ude00",
  "\ud800",
  "\udc00",
  "\r",
  "\n",
  "\r\n",
  "\n\r",
  "\ufeff",
];
// Bytes that make UTF-8 invalid: stray continuations, truncated leads,
// overlong forms, surrogates and leads past U+10FFFF.
const ODD_BYTES = [
  0x80,
  0xbf,
  0xc0,
  0xc2,
  0xe0,
  0xed,
  0xa0,
  0xf0,
  0xf4,
  0xf5,
  0xff,
];
const TYPES = [
  undefined,
  "",
  "text/plain",
  "Text/HTML;Charset=UTF-8",
  "a\u00e9",
  "a\u0019b",
  "\u007f",
  " x ",
  "application/octet-stream",
];
const SLICE_VALUES = [
  undefined,
  0,
  1,
  2,
  -1,
  -3,
  2.5,
  -2.5,
  NaN,
  Infinity,
  -Infinity,
  1e10,
  -1e10,
  "2",
  null,
  true,
  2 ** 53,
];

function bytes(random: Random): number[] {
  return Array.from(
    { length: random.below(6) },
    () => random.chance(0.3) ? random.pick(ODD_BYTES) : random.below(256),
  );
}

function part(random: Random, depth: number): Part {
  switch (random.below(depth > 1 ? 5 : 6)) {
    case 0:
    case 1: {
      let value = "";
      for (let i = random.below(4); i > 0; i--) value += random.pick(STRINGS);
      return { kind: "string", value };
    }
    case 2:
      return {
        kind: "bytes",
        view: random.pick([
          "Uint8Array",
          "Int8Array",
          "DataView",
          "Int16Array",
        ]),
        bytes: bytes(random),
        offset: random.below(2),
      };
    case 3:
      return { kind: "buffer", bytes: bytes(random) };
    case 4:
      return {
        kind: "other",
        value: random.pick([1, -0, NaN, true, null, undefined, 1n, { a: 1 }]),
      };
    default:
      return { kind: "blob", of: blobPlan(random, depth + 1) };
  }
}

function blobPlan(random: Random, depth = 0): BlobPlan {
  return {
    parts: Array.from({ length: random.below(4) }, () => part(random, depth)),
    type: random.pick(TYPES),
    endings: random.chance(0.05)
      ? "Native"
      : random.pick([undefined, "transparent", "native"]),
    file: random.chance(0.3)
      ? {
        name: random.pick(["f.txt", "", "\ud800", 5]),
        lastModified: random.pick([undefined, 0, -1, 1.5, 2 ** 53, NaN, "7"]),
      }
      : null,
  };
}

// ---- Building and reading a plan on one side ---------------------------

function makePart(side: Side, item: Part): unknown {
  switch (item.kind) {
    case "string":
    case "other":
      return item.value;
    case "buffer":
      return Uint8Array.from(item.bytes).buffer;
    case "blob":
      return makeBlob(side, item.of);
    case "bytes": {
      const buffer = new ArrayBuffer(item.bytes.length + item.offset + 2);
      new Uint8Array(buffer).set(item.bytes, item.offset);
      if (item.view === "DataView") {
        return new DataView(buffer, item.offset, item.bytes.length);
      }
      if (item.view === "Int16Array") {
        return new Int16Array(
          buffer,
          0,
          (item.bytes.length + item.offset) >> 1,
        );
      }
      const Ctor = item.view === "Int8Array" ? Int8Array : Uint8Array;
      return new Ctor(buffer, item.offset, item.bytes.length);
    }
  }
}

function makeBlob(side: Side, plan: BlobPlan): Blob {
  const parts = plan.parts.map((item) => makePart(side, item)) as BlobPart[];
  const options = { type: plan.type, endings: plan.endings } as FilePropertyBag;
  if (plan.file === null) return new side.Blob(parts, options);
  return new side.File(parts, plan.file.name as string, {
    ...options,
    lastModified: plan.file.lastModified as number,
  });
}

/**
 * A blob's fields, its text, its bytes read both ways, and File fields; a
 * File made without a time has the clock's, so only its type is shown.
 */
async function read(
  side: Side,
  blob: Blob,
  clock: boolean,
): Promise<unknown[]> {
  const out: unknown[] = [blob.size, blob.type, blob instanceof side.File];
  if (blob instanceof side.File) {
    out.push(blob.name, clock ? typeof blob.lastModified : blob.lastModified);
  }
  out.push(
    await blob.text(),
    Array.from(new Uint8Array(await blob.arrayBuffer())),
    Array.from(await blob.bytes()),
  );
  return out;
}

/** The blob, then each slice taken of the one before. */
async function blobCase(
  side: Side,
  { plan, slices }: BlobCase,
): Promise<unknown> {
  const made = outcome(() => makeBlob(side, plan)) as { value?: Blob };
  if (made.value === undefined) return made;
  const clock = plan.file !== null && plan.file.lastModified === undefined;
  const log: unknown[] = [await read(side, made.value, clock)];
  let blob = made.value;
  for (const args of slices) {
    const sliced = outcome(() =>
      (blob.slice as (...args: unknown[]) => Blob)(...args)
    ) as { value?: Blob };
    if (sliced.value === undefined) {
      log.push(sliced);
      break;
    }
    blob = sliced.value;
    log.push(await read(side, blob, clock));
  }
  return log;
}

async function fuzzBlob(
  seed: number,
  count: number,
): Promise<Record<string, number>> {
  const random = seeded(seed);
  const cases: BlobCase[] = [];
  for (let i = 0; i < count; i++) {
    cases.push({
      plan: blobPlan(random),
      slices: Array.from({ length: random.below(4) }, () =>
        Array.from(
          { length: random.below(4) },
          (_, at) => at === 2 ? random.pick(TYPES) : random.pick(SLICE_VALUES),
        )),
    });
  }
  return await assertSameAsyncAnswers(
    seed,
    cases,
    (item) => blobCase(realm, item),
    (item) => blobCase({ Blob, File }, item),
  );
}

Deno.test("Blob and File answer 1,000 random part lists and slice chains as Deno's do: sizes, types, endings, text of invalid UTF-8, bytes", async () => {
  await fuzzBlob(20260709, 1000);
});
