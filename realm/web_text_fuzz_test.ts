import assert from "node:assert/strict";
import { createWebText } from "./web_text.ts";
import { inQuickJS } from "./_differential_test.ts";
import {
  assertSameAnswers,
  type KnownDifference,
  outcome,
  type Random,
  seeded,
} from "./_fuzz_test.ts";

const realm = createWebText();

// ---- A grammar of UTF-8, valid and not ---------------------------------

/** The UTF-8 bytes of one code point, surrogates included (as CESU would). */
function utf8(point: number): number[] {
  if (point < 0x80) return [point];
  if (point < 0x800) return [0xc0 | (point >> 6), 0x80 | (point & 0x3f)];
  if (point < 0x10000) {
    return [
      0xe0 | (point >> 12),
      0x80 | ((point >> 6) & 0x3f),
      0x80 | (point & 0x3f),
    ];
  }
  return [
    0xf0 | (point >> 18),
    0x80 | ((point >> 12) & 0x3f),
    0x80 | ((point >> 6) & 0x3f),
    0x80 | (point & 0x3f),
  ];
}

/** `point` in `length` bytes, longer than it needs: an overlong form. */
function overlong(point: number, length: number): number[] {
  const lead = [0, 0, 0xc0, 0xe0, 0xf0][length]!;
  const bytes: number[] = [];
  for (let i = length - 1; i > 0; i--) {
    bytes.unshift(0x80 | (point & 0x3f));
    point >>= 6;
  }
  bytes.unshift(lead | point);
  return bytes;
}

const BOUNDARY_POINTS = [
  0x00,
  0x7f,
  0x80,
  0x7ff,
  0x800,
  0xfeff,
  0xfffd,
  0xffff,
  0x10000,
  0x10ffff,
];

/** One piece of a byte string: a character, a broken one or a BOM. */
function bytePiece(random: Random): number[] {
  switch (random.below(12)) {
    case 0:
    case 1:
      return [random.below(0x80)];
    case 2:
      return utf8(0x80 + random.below(0x780));
    case 3: {
      const point = 0x800 + random.below(0xf800);
      return utf8(point >= 0xd800 && point <= 0xdfff ? point + 0x800 : point);
    }
    case 4:
      return utf8(0x10000 + random.below(0x100000));
    case 5:
      return utf8(random.pick(BOUNDARY_POINTS));
    case 6:
      // Overlong forms, among them the ones decoders once let through.
      return overlong(
        random.pick([0, 0x2f, 0x7f, 0x7ff, 0xffff]),
        2 + random.below(3),
      );
    case 7:
      return utf8(0xd800 + random.below(0x800));
    case 8: {
      // Past U+10FFFF, and leads that start nothing.
      return random.chance(0.5)
        ? [0xf4, 0x90 + random.below(0x30), 0x80, 0x80]
        : [0xf5 + random.below(11)];
    }
    case 9: {
      const whole = utf8(0x80 + random.below(0x10ff80));
      return whole.slice(0, 1 + random.below(whole.length - 1));
    }
    case 10:
      return [0x80 + random.below(0x40)];
    default:
      return [0xef, 0xbb, 0xbf];
  }
}

function byteString(random: Random, pieces: number): Uint8Array {
  const bytes: number[] = [];
  for (let i = 0; i < pieces; i++) bytes.push(...bytePiece(random));
  return Uint8Array.from(bytes);
}

// ---- TextDecoder --------------------------------------------------------

type DecodeCase = {
  label: string;
  bytes: number[];
  fatal: boolean;
  ignoreBOM: boolean;
  /** Where a streaming decoder's chunks end, in order. */
  splits: number[];
};

/**
 * Decodes the bytes whole, then in chunks ending at each split with
 * `stream: true` but the last, on one decoder used twice in a row.
 */
function decodeCase(
  Decoder: typeof TextDecoder,
  { label, bytes, fatal, ignoreBOM, splits }: DecodeCase,
): unknown[] {
  const decoder = new Decoder(label, { fatal, ignoreBOM });
  const source = Uint8Array.from(bytes);
  const log: unknown[] = [outcome(() => decoder.decode(source))];
  for (let round = 0; round < 2; round++) {
    let start = 0;
    for (const end of [...splits, source.length]) {
      const chunk = source.subarray(start, end);
      const stream = end !== source.length;
      log.push(outcome(() => decoder.decode(chunk, { stream })));
      start = end;
    }
  }
  return log;
}

/** Every single split, two random ones, and a byte per chunk. */
function splitsOf(random: Random, length: number): number[][] {
  const out: number[][] = [];
  for (let at = 0; at <= length; at++) out.push([at]);
  const a = random.below(length + 1), b = random.below(length + 1);
  out.push([Math.min(a, b), Math.max(a, b)]);
  out.push(Array.from({ length }, (_, i) => i));
  return out;
}

/**
 * Where Deno 2.9.6 leaves the Encoding Standard while Node and browsers
 * keep to it: a differing case one of these covers is not a failure.
 */
const DENO_DECODER_DEVIATIONS: KnownDifference<DecodeCase>[] = [
  [
    // [0x41] then [0xef, 0xbb, 0xbf] streamed is "A\ufeff" (the standard,
    // Node, and Deno when fatal); Deno's ASCII fast path gives "A".
    "Deno drops a BOM that starts a chunk after streamed chunks of ASCII only",
    ({ label, bytes, fatal, ignoreBOM, splits }) => {
      if (label !== "utf-8") return false;
      const at = bytes.findIndex((byte) => byte >= 0x80);
      return !fatal && !ignoreBOM && at > 0 && splits.includes(at) &&
        bytes[at] === 0xef && bytes[at + 1] === 0xbb && bytes[at + 2] === 0xbf;
    },
  ],
];

function fuzzDecoder(seed: number, count: number): Record<string, number> {
  const random = seeded(seed);
  const cases: DecodeCase[] = [];
  for (let i = 0; i < count; i++) {
    const bytes = [...byteString(random, 1 + random.below(5))];
    if (random.chance(0.25)) bytes.unshift(0xef, 0xbb, 0xbf);
    const fatal = random.chance(0.4);
    const ignoreBOM = random.chance(0.4);
    for (const splits of splitsOf(random, bytes.length)) {
      cases.push({ label: "utf-8", bytes, fatal, ignoreBOM, splits });
    }
  }
  return assertSameAnswers(
    seed,
    cases,
    (item) => decodeCase(realm.TextDecoder, item),
    (item) => decodeCase(TextDecoder, item),
    DENO_DECODER_DEVIATIONS,
  );
}

Deno.test("TextDecoder decodes 1,000 grammar-built byte strings as Deno's does, whole and split at every byte, fatal or not, BOM or not", () => {
  fuzzDecoder(20260704, 1000);
});

// ---- A grammar of UTF-16, valid and not ------------------------------

const UTF16_EDGE_UNITS = [
  0x0000,
  0x0041,
  0x00e9,
  0xd7ff,
  0xe000,
  0xfeff,
  0xfffd,
  0xfffe,
  0xffff,
];

/** One piece of a UTF-16 unit string: a character, a lone surrogate, a BOM. */
function unitPiece(random: Random): number[] {
  const lead = () => 0xd800 + random.below(0x400);
  const trail = () => 0xdc00 + random.below(0x400);
  switch (random.below(8)) {
    case 0:
    case 1:
      return [random.below(0x80)];
    case 2:
      return [0x80 + random.below(0xd800 - 0x80)];
    case 3:
      return [lead(), trail()];
    case 4:
      return [lead()];
    case 5:
      return [trail()];
    case 6:
      return [random.pick(UTF16_EDGE_UNITS)];
    default:
      return [0xfeff];
  }
}

/** The bytes of 1 to 5 pieces, in either byte order, maybe one byte short. */
function utf16Bytes(random: Random, bigEndian: boolean): number[] {
  const bytes: number[] = [];
  for (let i = 0, n = 1 + random.below(5); i < n; i++) {
    for (const unit of unitPiece(random)) {
      const [high, low] = [unit >> 8, unit & 0xff];
      bytes.push(...(bigEndian ? [high, low] : [low, high]));
    }
  }
  if (random.chance(0.2)) bytes.push(random.below(0x100));
  return bytes;
}

/**
 * Where Deno 2.9.6's UTF-16 decoder fails: after a fatal error it keeps
 * the unit that followed a lead surrogate, and a next chunk too short to
 * hold it throws a `RangeError` (no decoder throws one) and loses a byte.
 */
const DENO_UTF16_DEVIATIONS: KnownDifference<DecodeCase>[] = [
  [
    "Deno throws a RangeError for a unit kept after a fatal error",
    (item) =>
      JSON.stringify(decodeCase(TextDecoder, item)).includes("RangeError"),
  ],
];

function fuzzUtf16Decoder(seed: number, count: number): Record<string, number> {
  const random = seeded(seed);
  const cases: DecodeCase[] = [];
  for (let i = 0; i < count; i++) {
    const label = random.pick(["utf-16le", "utf-16be"]);
    const bytes = utf16Bytes(random, label === "utf-16be");
    const fatal = random.chance(0.4);
    const ignoreBOM = random.chance(0.4);
    for (const splits of splitsOf(random, bytes.length)) {
      cases.push({ label, bytes, fatal, ignoreBOM, splits });
    }
  }
  return assertSameAnswers(
    seed,
    cases,
    (item) => decodeCase(realm.TextDecoder, item),
    (item) => decodeCase(TextDecoder, item),
    DENO_UTF16_DEVIATIONS,
  );
}

Deno.test("TextDecoder decodes 1,000 grammar-built UTF-16 byte strings as Deno's does, both byte orders, whole and split at every byte, fatal or not, BOM or not", () => {
  fuzzUtf16Decoder(20261203, 1000);
});

/**
 * "A" streamed, then a BOM and "B": each chunk's text, as JSON.
 * Self-contained, for QuickJS.
 */
function bomAfterAscii(Decoder: typeof TextDecoder = TextDecoder): string {
  const decoder = new Decoder();
  return JSON.stringify([
    decoder.decode(Uint8Array.of(0x41), { stream: true }),
    decoder.decode(Uint8Array.of(0xef, 0xbb, 0xbf, 0x42)),
  ]);
}

Deno.test("a BOM that starts a chunk after streamed ASCII stays, as the Encoding Standard has it, here and inside QuickJS", async () => {
  const standard = JSON.stringify(["A", "\ufeffB"]);
  assert.equal(bomAfterAscii(realm.TextDecoder), standard);
  assert.equal(await inQuickJS(`(${bomAfterAscii})()`), standard);
});

// ---- TextEncoder ------------------------------------------------------

const TEXT_UNITS = [
  () => "a",
  () => "\u0000",
  () => "\u00e9",
  () => "\u07ff",
  () => "\u0800",
  () => "\u20ac",
  () => "\ufeff",
  () => "\uffff",
  () => "\ud83d\ude00",
  () => "\udbff\udfff",
  () => "\ud800",
  () => "\udbff",
  () => "\udc00",
  () => "\udfff",
];

function textOf(random: Random, length: number): string {
  let out = "";
  for (let i = 0; i < length; i++) {
    out += random.chance(0.2)
      ? String.fromCharCode(random.below(0x10000))
      : random.pick(TEXT_UNITS)();
  }
  return out;
}

type EncodeCase = { text: string; room: number; offset: number };

/** `encode`, then `encodeInto` a view of `room` bytes at `offset`. */
function encodeCase(
  Encoder: typeof TextEncoder,
  { text, room, offset }: EncodeCase,
): unknown[] {
  const encoder = new Encoder();
  const buffer = new Uint8Array(offset + room + 2).fill(0xaa);
  const target = buffer.subarray(offset, offset + room);
  return [
    outcome(() => Array.from(encoder.encode(text))),
    outcome(() => encoder.encodeInto(text, target)),
    Array.from(buffer),
  ];
}

function fuzzEncoder(seed: number, count: number): Record<string, number> {
  const random = seeded(seed);
  const cases: EncodeCase[] = [];
  for (let i = 0; i < count; i++) {
    const text = textOf(random, random.below(8));
    for (let room = 0; room <= text.length * 3 + 1; room++) {
      cases.push({ text, room, offset: random.below(3) });
    }
  }
  return assertSameAnswers(
    seed,
    cases,
    (item) => encodeCase(realm.TextEncoder, item),
    (item) => encodeCase(TextEncoder, item),
  );
}

Deno.test("TextEncoder encodes 800 strings with lone surrogates as Deno's does, and encodeInto fills every destination size alike", () => {
  fuzzEncoder(20260705, 800);
});

// ---- atob and btoa ----------------------------------------------------

const BASE64 =
  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** Base64-like text: quads, padding and white space where they may not go. */
function base64Text(random: Random): string {
  let out = "";
  const quads = random.below(4);
  for (let i = 0; i < quads * 4 + random.below(4); i++) {
    out += BASE64[random.below(64)];
  }
  if (random.chance(0.5)) out += random.pick(["=", "==", "===", "A=", "A=="]);
  const chars = [...out];
  for (let i = random.below(3); i > 0; i--) {
    chars.splice(
      random.below(chars.length + 1),
      0,
      random.pick([
        " ",
        "\t",
        "\n",
        "\f",
        "\r",
        "\v",
        "\u00a0",
        "=",
        "-",
        "_",
        "\u00e9",
        "\u0000",
        "\u0100",
        "\ud800",
        "%",
        ".",
      ]),
    );
  }
  return chars.join("");
}

/** A "binary string" for btoa: Latin-1, and now and then a wider unit. */
function binaryText(random: Random): string {
  let out = "";
  for (let i = random.below(10); i > 0; i--) {
    out += String.fromCharCode(
      random.chance(0.05) ? 0x100 + random.below(0xff00) : random.below(0x100),
    );
  }
  return out;
}

function fuzzBase64(seed: number, count: number): Record<string, number> {
  const random = seeded(seed);
  const cases: ["atob" | "btoa", string][] = [];
  for (let i = 0; i < count; i++) {
    cases.push(["atob", base64Text(random)], ["btoa", binaryText(random)]);
  }
  return assertSameAnswers(
    seed,
    cases,
    ([name, text]) => outcome(() => realm[name](text)),
    ([name, text]) => outcome(() => globalThis[name](text)),
  );
}

Deno.test("atob and btoa answer 3,000 grammar-built inputs as Deno's do: padding, white space, bad characters, the Latin-1 range", () => {
  fuzzBase64(20260706, 3000);
});
