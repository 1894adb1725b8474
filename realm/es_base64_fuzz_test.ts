import { type Base64Methods, createBase64Methods } from "./es_base64.ts";
import { createValueText } from "./es_builtins.ts";
import {
  assertSameAnswers,
  outcome,
  type Random,
  seeded,
} from "./_fuzz_test.ts";

const realm = createBase64Methods(createValueText());

/** Deno's own methods, in the same shape as the realm's. */
const deno: Base64Methods = {
  fromBase64: Uint8Array.fromBase64,
  fromHex: Uint8Array.fromHex,
  toBase64: Uint8Array.prototype.toBase64,
  toHex: Uint8Array.prototype.toHex,
  setFromBase64: Uint8Array.prototype.setFromBase64,
  setFromHex: Uint8Array.prototype.setFromHex,
};

const BASE64_CHARS =
  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const BASE64URL_CHARS = BASE64_CHARS.slice(0, 62) + "-_";

/**
 * Base64, mostly of the alphabet the options name: whole quads, a last
 * chunk of one to three characters, padding right or wrong, ASCII white
 * space anywhere and now and then a character the alphabet lacks.
 */
function base64Text(random: Random, alphabet: unknown): string {
  const chars = alphabet === "base64url" ? BASE64URL_CHARS : BASE64_CHARS;
  const parts: string[] = [];
  const length = random.below(4) * 4 + random.below(4);
  for (let i = 0; i < length; i++) parts.push(chars[random.below(64)]!);
  if (random.chance(0.4)) parts.push(random.pick(["=", "==", "===", "= ="]));
  for (let i = random.below(4); i > 0; i--) {
    parts.splice(
      random.below(parts.length + 1),
      0,
      random.chance(0.7)
        ? random.pick([" ", "\t", "\n", "\f", "\r"])
        : random.pick(["\v", "\u00a0", "=", "*", "+", "-", "_", "\u0000"]),
    );
  }
  return parts.join("");
}

/** Hex: pairs, an odd digit, white space or a letter past "f". */
function hexText(random: Random): string {
  let out = "";
  for (let i = random.below(8); i > 0; i--) {
    out += "0123456789abcdefABCDEF"[random.below(22)]!;
  }
  if (random.chance(0.2)) {
    const at = random.below(out.length + 1);
    out = out.slice(0, at) + random.pick([" ", "g", "G", "x", "\u0660", "0"]) +
      out.slice(at);
  }
  return out;
}

type Base64Case =
  | ["fromBase64", string, object]
  | ["setFromBase64", string, object, number]
  | ["fromHex", string]
  | ["setFromHex", string, number]
  | ["toBase64", number[], object]
  | ["toHex", number[]];

/** What one call gives, with a target's bytes after it (written or not). */
function base64Case(methods: Base64Methods, item: Base64Case): unknown {
  const [method] = item;
  if (method === "fromBase64" || method === "fromHex") {
    return outcome(() =>
      Array.from(
        method === "fromBase64"
          ? methods.fromBase64(item[1], item[2] as object)
          : methods.fromHex(item[1]),
      )
    );
  }
  if (method === "toBase64") {
    return outcome(() =>
      methods.toBase64.call(Uint8Array.from(item[1]), item[2])
    );
  }
  if (method === "toHex") {
    return outcome(() => methods.toHex.call(Uint8Array.from(item[1])));
  }
  const room = method === "setFromBase64" ? item[3] : item[2];
  const buffer = new Uint8Array(room + 2).fill(0xaa);
  const target = buffer.subarray(1, 1 + room);
  const result = outcome(() =>
    method === "setFromBase64"
      ? methods.setFromBase64.call(target, item[1], item[2])
      : methods.setFromHex.call(target, item[1])
  );
  return [result, Array.from(buffer)];
}

const ALPHABETS = [undefined, "base64", "base64url"];
const LAST_CHUNKS = [undefined, "loose", "strict", "stop-before-partial"];

function base64Options(random: Random): object {
  const options: Record<string, unknown> = {};
  if (random.chance(0.8)) options.alphabet = random.pick(ALPHABETS);
  if (random.chance(0.8)) options.lastChunkHandling = random.pick(LAST_CHUNKS);
  return options;
}

function fuzzBase64(seed: number, count: number): Record<string, number> {
  const random = seeded(seed);
  const cases: Base64Case[] = [];
  for (let i = 0; i < count; i++) {
    const options = base64Options(random) as { alphabet?: string };
    const text = base64Text(random, options.alphabet);
    cases.push(["fromBase64", text, options]);
    // Every room from none to more than the input can fill.
    for (let room = 0; room <= Math.ceil(text.length * 3 / 4) + 1; room++) {
      cases.push(["setFromBase64", text, options, room]);
    }
    const hex = hexText(random);
    cases.push(["fromHex", hex]);
    for (let room = 0; room <= (hex.length >> 1) + 1; room++) {
      cases.push(["setFromHex", hex, room]);
    }
    const bytes = Array.from(
      { length: random.below(8) },
      () => random.below(256),
    );
    cases.push(["toHex", bytes], [
      "toBase64",
      bytes,
      {
        alphabet: random.pick(ALPHABETS),
        omitPadding: random.pick([undefined, true, false]),
      },
    ]);
  }
  return assertSameAnswers(
    seed,
    cases,
    (item) => base64Case(realm, item),
    (item) => base64Case(deno, item),
  );
}

Deno.test("Uint8Array's base64 and hex methods answer 1,500 grammar-built inputs as Deno's do, at every target size", () => {
  fuzzBase64(20260707, 1500);
});
