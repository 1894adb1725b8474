// This module is browser compatible.

/**
 * `URL` and `URLSearchParams` for a realm whose engine has no host Web APIs
 * (QuickJS), after the WHATWG URL Standard: the basic URL parser with the
 * state overrides its setters use, hosts (domains, IPv4, IPv6, opaque
 * hosts), the URL serializer, origins and the
 * `application/x-www-form-urlencoded` parser and serializer, so that guest
 * code and packs (validators, routers) read URLs as the worker tier and a
 * browser do. Domains that are not ASCII go through a small form of UTS #46
 * (NFKC, case folding, Punycode and the cheap validity checks) rather than
 * its tables; docs/loader.md lists where that differs from Deno. Pure
 * computation: nothing here reaches the host. Runs inside a realm:
 * self-contained, turned into source by `realm/realm_source.ts`, and frozen
 * by the realm's lockdown with every other intrinsic.
 *
 * @module
 */

/** What {@linkcode createWebUrl} makes, by global name. */
export interface WebUrl {
  URL: typeof URL;
  URLSearchParams: typeof URLSearchParams;
}

/**
 * Makes the realm's `URL` and `URLSearchParams`. Self-contained: it
 * captures the intrinsics it uses when it is called.
 *
 * @param TextDecoderCtor The realm's `TextDecoder`, for percent-decoded
 * UTF-8.
 * @returns The two constructors, by global name.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createWebUrl } from "./web_url.ts";
 *
 * const { URL } = createWebUrl(TextDecoder);
 * const url = new URL("../b?q=1#top", "https://Example.com:443/a/c");
 * assert.equal(url.href, "https://example.com/b?q=1#top");
 * assert.equal(url.searchParams.get("q"), "1");
 * ```
 */
export function createWebUrl(TextDecoderCtor: typeof TextDecoder): WebUrl {
  "use strict";
  const { create, defineProperty, getOwnPropertyDescriptor, getPrototypeOf } =
    Object;
  const { apply, ownKeys } = Reflect;
  const fromCharCode = String.fromCharCode;
  const fromCodePoint = String.fromCodePoint;
  const TypeErrorCtor = TypeError;
  const Uint8ArrayCtor = Uint8Array;
  const Uint16ArrayCtor = Uint16Array;
  const Uint32ArrayCtor = Uint32Array;
  const bufferOf = getOwnPropertyDescriptor(
    getPrototypeOf(Uint8Array.prototype) as object,
    "buffer",
  )!.get!;
  const WeakMapCtor = WeakMap;
  const RegExpCtor = RegExp;
  const iteratorSymbol: typeof Symbol.iterator = Symbol.iterator;
  const tagSymbol = Symbol.toStringTag;
  const utf8 = new TextDecoderCtor("utf-8", { ignoreBOM: true });
  const decodeBytes = utf8.decode;
  const iteratorPrototype = getPrototypeOf(
    getPrototypeOf([][Symbol.iterator]()),
  ) as object;
  const HEX = "0123456789ABCDEF";
  const EOF = -1;

  /** The URL record of the standard; a host is kept serialized. */
  interface UrlRecord {
    scheme: string;
    username: string;
    password: string;
    host: string | null;
    port: number | null;
    /** A list of segments, or a string when the path is opaque. */
    path: string[] | string;
    query: string | null;
    fragment: string | null;
  }

  const SPECIAL: Record<string, number | null> = {
    __proto__: null,
    ftp: 21,
    file: null,
    http: 80,
    https: 443,
    ws: 80,
    wss: 443,
  } as unknown as Record<string, number | null>;
  function isSpecial(scheme: string): boolean {
    return scheme in SPECIAL;
  }
  function defaultPort(scheme: string): number | null {
    return scheme in SPECIAL ? SPECIAL[scheme]! : null;
  }

  // The percent-encode sets, one bit each over printable ASCII; every set
  // also holds the C0 controls and everything above U+007E.
  const C0 = 0, FRAGMENT = 1, QUERY = 2, SPECIAL_QUERY = 4, PATH = 8;
  const USERINFO = 16, COMPONENT = 32, FORM = 64;
  const SETS = new Uint8ArrayCtor(128);
  const members: [number, string][] = [
    [FRAGMENT, ' "<>`'],
    [QUERY | SPECIAL_QUERY | PATH | USERINFO | COMPONENT | FORM, ' "#<>'],
    [SPECIAL_QUERY, "'"],
    [PATH | USERINFO | COMPONENT | FORM, "?`{}"],
    [USERINFO | COMPONENT | FORM, "/:;=@[\\]^|"],
    [COMPONENT | FORM, "$%&+,"],
    [FORM, "!'()~"],
  ];
  for (const [bits, chars] of members) {
    for (let i = 0; i < chars.length; i++) SETS[chars.charCodeAt(i)]! |= bits;
  }

  function percentByte(byte: number): string {
    return "%" + HEX[byte >> 4]! + HEX[byte & 15]!;
  }

  /** One code point, UTF-8 percent-encoded when `set` holds it. */
  function encodePoint(point: number, set: number): string {
    if (point >= 0x20 && point < 0x7f) {
      return set !== C0 && (SETS[point]! & set) !== 0
        ? percentByte(point)
        : fromCharCode(point);
    }
    if (point < 0x80) return percentByte(point);
    if (point < 0x800) {
      return percentByte(0xc0 | (point >> 6)) +
        percentByte(0x80 | (point & 0x3f));
    }
    if (point < 0x10000) {
      return percentByte(0xe0 | (point >> 12)) +
        percentByte(0x80 | ((point >> 6) & 0x3f)) +
        percentByte(0x80 | (point & 0x3f));
    }
    return percentByte(0xf0 | (point >> 18)) +
      percentByte(0x80 | ((point >> 12) & 0x3f)) +
      percentByte(0x80 | ((point >> 6) & 0x3f)) +
      percentByte(0x80 | (point & 0x3f));
  }

  function encodeText(text: string, set: number, spaceAsPlus = false): string {
    let out = "";
    for (const char of text) {
      const point = char.codePointAt(0)!;
      out += spaceAsPlus && point === 0x20 ? "+" : encodePoint(point, set);
    }
    return out;
  }

  function hexValue(code: number): number {
    if (code >= 0x30 && code <= 0x39) return code - 0x30;
    if (code >= 0x41 && code <= 0x46) return code - 0x37;
    if (code >= 0x61 && code <= 0x66) return code - 0x57;
    return -1;
  }

  /**
   * Percent-decodes `text` and reads the bytes as UTF-8, BOM and all. The
   * bytes are written into one buffer sized first and decoded in place: an
   * array of numbers per byte held some 28 bytes of heap per character.
   */
  function percentDecode(text: string): string {
    if (text.indexOf("%") < 0) return text;
    // The UTF-8 bytes of `text`, read from its own percent-encoding.
    const bytes = utf8Of(text);
    let written = 0;
    for (let i = 0; i < bytes.length; i++) {
      const high = i + 2 < bytes.length ? hexValue(bytes[i + 1]!) : -1;
      const low = high < 0 ? -1 : hexValue(bytes[i + 2]!);
      if (bytes[i] === 0x25 && low >= 0) {
        bytes[written++] = high * 16 + low;
        i += 2;
      } else bytes[written++] = bytes[i]!;
    }
    const buffer = apply(bufferOf, bytes, []) as ArrayBuffer;
    const decoded = new Uint8ArrayCtor(buffer, 0, written);
    return apply(decodeBytes, utf8, [decoded]) as string;
  }

  /**
   * The UTF-8 bytes of `text`'s code points, a lone surrogate encoded as
   * any other code point, as `encodePoint` spells them.
   */
  function utf8Of(text: string): Uint8Array {
    let size = 0;
    for (let i = 0; i < text.length; i++) {
      const unit = text.charCodeAt(i);
      if (unit < 0x80) size += 1;
      else if (unit < 0x800) size += 2;
      else if (isPairAt(text, i)) {
        size += 4;
        i++;
      } else size += 3;
    }
    const bytes = new Uint8ArrayCtor(size);
    for (let i = 0, at = 0; i < text.length; i++) {
      const unit = text.charCodeAt(i);
      if (unit < 0x80) {
        bytes[at++] = unit;
        continue;
      }
      const point = pointAt(text, i);
      if (point > 0xffff) i++;
      const tail = point < 0x800 ? 1 : point < 0x10000 ? 2 : 3;
      const lead = tail === 1 ? 0xc0 : tail === 2 ? 0xe0 : 0xf0;
      bytes[at++] = lead | (point >> (6 * tail));
      for (let shift = 6 * (tail - 1); shift >= 0; shift -= 6) {
        bytes[at++] = 0x80 | ((point >> shift) & 0x3f);
      }
    }
    return bytes;
  }

  /** The code point at `at`, a lone surrogate as itself. */
  function pointAt(text: string, at: number): number {
    if (!isPairAt(text, at)) return text.charCodeAt(at);
    return 0x10000 + ((text.charCodeAt(at) - 0xd800) << 10) +
      (text.charCodeAt(at + 1) - 0xdc00);
  }

  function stringOf(value: unknown): string {
    // V8's words, which QuickJS puts otherwise.
    if (typeof value === "symbol") {
      throw new TypeErrorCtor("Cannot convert a Symbol value to a string");
    }
    return `${value}`;
  }

  /** A USVString: `value` as a string, lone surrogates as U+FFFD. */
  function usv(value: unknown): string {
    const text = stringOf(value);
    let out = "";
    let from = 0;
    for (let i = 0; i < text.length; i++) {
      const unit = text.charCodeAt(i);
      if (unit < 0xd800 || unit > 0xdfff) continue;
      const next = text.charCodeAt(i + 1);
      if (unit <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        i++;
        continue;
      }
      out += text.slice(from, i) + "\ufffd";
      from = i + 1;
    }
    return from === 0 ? text : out + text.slice(from);
  }

  // ---- Hosts ----------------------------------------------------------

  function isForbiddenHost(code: number): boolean {
    return code === 0 || code === 9 || code === 10 || code === 13 ||
      code === 0x20 || code === 0x23 || code === 0x2f || code === 0x3a ||
      code === 0x3c || code === 0x3e || code === 0x3f || code === 0x40 ||
      code === 0x5b || code === 0x5c || code === 0x5d || code === 0x5e ||
      code === 0x7c;
  }
  function isForbiddenDomain(code: number): boolean {
    return isForbiddenHost(code) || code <= 0x1f || code === 0x25 ||
      code === 0x7f;
  }

  /** The host parser: a serialized host, or null for failure. */
  function parseHost(input: string, isOpaque: boolean): string | null {
    if (input[0] === "[") {
      if (input[input.length - 1] !== "]") return null;
      const pieces = parseIpv6(input.slice(1, -1));
      return pieces === null ? null : "[" + serializeIpv6(pieces) + "]";
    }
    if (isOpaque) {
      for (let i = 0; i < input.length; i++) {
        if (isForbiddenHost(input.charCodeAt(i))) return null;
      }
      return encodeText(input, C0);
    }
    const ascii = domainToAscii(percentDecode(input));
    if (ascii === null || ascii === "") return null;
    for (let i = 0; i < ascii.length; i++) {
      if (isForbiddenDomain(ascii.charCodeAt(i))) return null;
    }
    if (endsInNumber(ascii)) {
      const address = parseIpv4(ascii);
      if (address === null) return null;
      const bytes: number[] = [];
      for (let shift = 24; shift >= 0; shift -= 8) {
        bytes.push((address / 2 ** shift) & 255);
      }
      return bytes.join(".");
    }
    return ascii;
  }

  function endsInNumber(input: string): boolean {
    const parts = input.split(".");
    if (parts[parts.length - 1] === "") {
      if (parts.length === 1) return false;
      parts.pop();
    }
    const last = parts[parts.length - 1]!;
    if (last !== "" && /^[0-9]+$/.test(last)) return true;
    return /^0[xX][0-9a-fA-F]*$/.test(last);
  }

  /** An IPv4 number part, or NaN. */
  function parseIpv4Number(part: string): number {
    if (part === "") return NaN;
    if (/^0[xX]/.test(part)) {
      return /^0[xX][0-9a-fA-F]*$/.test(part)
        ? (part.length === 2 ? 0 : parseInt(part.slice(2), 16))
        : NaN;
    }
    if (part.length > 1 && part[0] === "0") {
      return /^[0-7]+$/.test(part) ? parseInt(part.slice(1), 8) : NaN;
    }
    return /^[0-9]+$/.test(part) ? parseInt(part, 10) : NaN;
  }

  function parseIpv4(input: string): number | null {
    const parts = input.split(".");
    if (parts[parts.length - 1] === "" && parts.length > 1) parts.pop();
    if (parts.length > 4) return null;
    const numbers: number[] = [];
    for (const part of parts) {
      const value = parseIpv4Number(part);
      if (value !== value) return null;
      numbers.push(value);
    }
    for (let i = 0; i < numbers.length - 1; i++) {
      if (numbers[i]! > 255) return null;
    }
    const last = numbers[numbers.length - 1]!;
    if (last >= 256 ** (5 - numbers.length)) return null;
    let address = last;
    for (let i = 0; i < numbers.length - 1; i++) {
      address += numbers[i]! * 256 ** (3 - i);
    }
    return address;
  }

  function parseIpv6(input: string): number[] | null {
    const address = [0, 0, 0, 0, 0, 0, 0, 0];
    let piece = 0;
    let compress: number | null = null;
    let at = 0;
    const codeAt = (i: number) => i < input.length ? input.charCodeAt(i) : EOF;
    const isDigit = (code: number) => code >= 0x30 && code <= 0x39;
    if (codeAt(at) === 0x3a) {
      if (codeAt(at + 1) !== 0x3a) return null;
      at += 2;
      compress = ++piece;
    }
    while (codeAt(at) !== EOF) {
      if (piece === 8) return null;
      if (codeAt(at) === 0x3a) {
        if (compress !== null) return null;
        at++;
        compress = ++piece;
        continue;
      }
      let value = 0;
      let length = 0;
      while (length < 4 && hexValue(codeAt(at)) >= 0) {
        value = value * 16 + hexValue(codeAt(at));
        at++;
        length++;
      }
      if (codeAt(at) === 0x2e) {
        // An IPv4 address in the last two pieces.
        if (length === 0) return null;
        at -= length;
        if (piece > 6) return null;
        let seen = 0;
        while (codeAt(at) !== EOF) {
          let part: number | null = null;
          if (seen > 0) {
            if (codeAt(at) === 0x2e && seen < 4) at++;
            else return null;
          }
          if (!isDigit(codeAt(at))) return null;
          while (isDigit(codeAt(at))) {
            const digit = codeAt(at) - 0x30;
            if (part === null) part = digit;
            else if (part === 0) return null;
            else part = part * 10 + digit;
            if (part > 255) return null;
            at++;
          }
          address[piece] = address[piece]! * 0x100 + part!;
          seen++;
          if (seen === 2 || seen === 4) piece++;
        }
        if (seen !== 4) return null;
        break;
      } else if (codeAt(at) === 0x3a) {
        at++;
        if (codeAt(at) === EOF) return null;
      } else if (codeAt(at) !== EOF) return null;
      address[piece++] = value;
    }
    if (compress !== null) {
      let swaps = piece - compress;
      piece = 7;
      while (piece !== 0 && swaps > 0) {
        const other = compress + swaps - 1;
        const kept = address[piece]!;
        address[piece] = address[other]!;
        address[other] = kept;
        piece--;
        swaps--;
      }
    } else if (piece !== 8) return null;
    return address;
  }

  /** Hex pieces joined by colons, the first longest run of zeros as `::`. */
  function serializeIpv6(address: number[]): string {
    let compress = -1;
    let best = 1;
    for (let i = 0; i < 8;) {
      let end = i;
      while (end < 8 && address[end] === 0) end++;
      if (end - i > best) {
        best = end - i;
        compress = i;
      }
      i = end === i ? i + 1 : end;
    }
    let out = "";
    for (let i = 0; i < 8; i++) {
      if (i === compress) {
        out += i === 0 ? "::" : ":";
        i += best - 1;
        continue;
      }
      out += address[i]!.toString(16);
      if (i !== 7) out += ":";
    }
    return out;
  }

  // ---- Domain to ASCII -------------------------------------------------

  const PUNY_BASE = 36, T_MIN = 1, T_MAX = 26, SKEW = 38, DAMP = 700;
  const MAX_INT = 0x7fffffff;

  function adapt(delta: number, points: number, first: boolean): number {
    delta = first ? Math.floor(delta / DAMP) : delta >> 1;
    delta += Math.floor(delta / points);
    let k = 0;
    while (delta > ((PUNY_BASE - T_MIN) * T_MAX) >> 1) {
      delta = Math.floor(delta / (PUNY_BASE - T_MIN));
      k += PUNY_BASE;
    }
    return k + Math.floor(((PUNY_BASE - T_MIN + 1) * delta) / (delta + SKEW));
  }

  function threshold(k: number, bias: number): number {
    return k <= bias ? T_MIN : k >= bias + T_MAX ? T_MAX : k - bias;
  }

  /** RFC 3492 decoding of an ASCII label's tail, or null. */
  function punycodeDecode(input: string): string | null {
    const output: number[] = [];
    const delimiter = input.lastIndexOf("-");
    for (let i = 0; i < delimiter; i++) output.push(input.charCodeAt(i));
    let n = 128, bias = 72, i = 0;
    for (let at = delimiter > 0 ? delimiter + 1 : 0; at < input.length;) {
      const old = i;
      for (let w = 1, k = PUNY_BASE;; k += PUNY_BASE) {
        if (at >= input.length) return null;
        const code = input.charCodeAt(at++);
        const digit = code >= 0x61 && code <= 0x7a
          ? code - 0x61
          : code >= 0x41 && code <= 0x5a
          ? code - 0x41
          : code >= 0x30 && code <= 0x39
          ? code - 22
          : PUNY_BASE;
        if (digit >= PUNY_BASE || digit > Math.floor((MAX_INT - i) / w)) {
          return null;
        }
        i += digit * w;
        const t = threshold(k, bias);
        if (digit < t) break;
        if (w > Math.floor(MAX_INT / (PUNY_BASE - t))) return null;
        w *= PUNY_BASE - t;
      }
      const count = output.length + 1;
      bias = adapt(i - old, count, old === 0);
      n += Math.floor(i / count);
      i %= count;
      if (n > 0x10ffff || (n >= 0xd800 && n <= 0xdfff)) return null;
      output.splice(i++, 0, n);
    }
    return apply(fromCodePoint, null, output) as string;
  }

  /** RFC 3492 encoding of a label's code points. */
  function punycodeEncode(label: string): string {
    const points: number[] = [];
    for (const char of label) points.push(char.codePointAt(0)!);
    let out = "";
    for (const point of points) if (point < 0x80) out += fromCharCode(point);
    const basic = out.length;
    let handled = basic;
    if (basic > 0) out += "-";
    let n = 128, delta = 0, bias = 72;
    while (handled < points.length) {
      let next = 0x10ffff;
      for (const point of points) if (point >= n && point < next) next = point;
      delta += (next - n) * (handled + 1);
      n = next;
      for (const point of points) {
        if (point < n) delta++;
        if (point !== n) continue;
        let q = delta;
        for (let k = PUNY_BASE;; k += PUNY_BASE) {
          const t = threshold(k, bias);
          if (q < t) break;
          const digit = t + ((q - t) % (PUNY_BASE - t));
          out += fromCharCode(digit < 26 ? digit + 0x61 : digit + 22);
          q = Math.floor((q - t) / (PUNY_BASE - t));
        }
        out += fromCharCode(q < 26 ? q + 0x61 : q + 22);
        bias = adapt(delta, handled + 1, handled === basic);
        delta = 0;
        handled++;
      }
      delta++;
      n++;
    }
    return out;
  }

  // UTS #46 without its tables: characters it ignores, the dots it maps to
  // U+002E, and what it refuses that a regular expression can name.
  const IGNORED =
    /^[\u00ad\u034f\u180b-\u180d\u180f\u200b\u2060\u2064\ufe00-\ufe0f\ufeff\u{1bca0}-\u{1bca3}\u{e0100}-\u{e01ef}]$/u;
  const FULL_STOPS = /^[\u3002\uff0e\uff61]$/;
  // Classes by Unicode property, made on first use: compiled, their tables
  // would weigh more in the hardened image than all the rest of this file.
  // Besides controls, surrogates, private use, unassigned, format and space
  // characters, UTS #46 refuses a few letters and symbols: uppercase letters
  // whose lowercase came later (U+04C0, Georgian capitals, U+2132, U+2183),
  // the Hangul fillers, Khmer's inherent vowels, the Mongolian todo soft
  // hyphen and the ideographic description characters.
  let classes: Record<"disallowed" | "mark" | "letter", RegExp>;
  function unicodeClass(name: keyof typeof classes): RegExp {
    classes ??= {
      disallowed: new RegExpCtor(
        "[\\p{Cc}\\p{Cs}\\p{Co}\\p{Cn}\\p{Cf}\\p{Z}\\ufffc\\ufffd\\u04c0" +
          "\\u10a0-\\u10c5\\u115f\\u1160\\u17b4\\u17b5\\u1806\\u2132\\u2183" +
          "\\u2ff0-\\u2fff\\u3164\\u31ef\\uffa0]",
        "u",
      ),
      mark: new RegExpCtor("^\\p{M}", "u"),
      letter: new RegExpCtor("[\\p{L}\\p{N}]", "u"),
    };
    return classes[name];
  }

  /**
   * Case folding as UTS #46 maps it, where lowercasing alone falls short:
   * a character folds to the lowercase of its uppercase (U+0345 to iota,
   * a Greek letter with ypogegrammeni to two letters), Cherokee to its
   * uppercase, and "ß" and dotless "ı" stay as they are.
   */
  function caseFolded(text: string): string {
    let out = "";
    for (const char of text) {
      if (char === "\u00df" || char === "\u0131") {
        out += char;
        continue;
      }
      const upper = char.toUpperCase();
      out += /^[\u13a0-\u13f5]$/.test(upper) ? upper : upper.toLowerCase();
    }
    return out;
  }

  /**
   * UTS #46 mapping: ASCII lowercased, ignored characters dropped, the
   * ideographic full stops made dots, final sigma kept, the rest NFKC and
   * case folded; null for a character it refuses.
   */
  function mapDomain(domain: string): string | null {
    let out = "";
    for (const char of domain) {
      if (char < "\x80") out += char.toLowerCase();
      else if (FULL_STOPS.test(char)) out += ".";
      else if (!IGNORED.test(char)) {
        const mapped = char === "\u03c2"
          ? char
          : caseFolded(char.normalize("NFKC")).normalize("NFKC");
        // A character whose compatibility form holds a full stop (U+2024,
        // U+FE12) is refused, so it cannot make a label of its own.
        if (
          /[.\u3002\uff0e\uff61]/.test(mapped) ||
          unicodeClass("disallowed").test(char) ||
          unicodeClass("disallowed").test(mapped)
        ) return null;
        out += mapped;
      }
    }
    return out.normalize("NFC");
  }

  // The blocks Unicode sets aside for scripts written right to left, whose
  // letters, digits and most signs are right to left; the signs among them
  // that are neutral; and the digits that are Arabic numbers.
  const RTL_BLOCKS =
    /[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefe\u{10800}-\u{10fff}\u{1e800}-\u{1efff}]/u;
  const NEUTRAL_IN_RTL =
    /[\u0606\u0607\u0609\u060a\u060c\u060e\u060f\u066a\u06de\u06e9\u07f6-\u07f9\ufd3e-\ufd4f\ufdcf\ufdfd-\ufdff\u{1091f}\u{10b39}-\u{10b3f}\u{1eef0}\u{1eef1}]/u;
  const ARABIC_DIGITS =
    /[\u0660-\u0669\u066b\u066c\u{10d30}-\u{10d39}\u{10e60}-\u{10e7e}]/u;

  /** RFC 5893's bidi class of a character, judged by its block. */
  function bidiClass(char: string): string {
    if (/[0-9\u06f0-\u06f9]/.test(char)) return "EN";
    if (ARABIC_DIGITS.test(char)) return "AN";
    if (unicodeClass("mark").test(char)) return "NSM";
    if (RTL_BLOCKS.test(char)) return NEUTRAL_IN_RTL.test(char) ? "ON" : "R";
    if (unicodeClass("letter").test(char)) return "L";
    return "ON";
  }
  /** RFC 5893's rules over one label's bidi classes. */
  function passesBidi(classes: string[]): boolean {
    if (classes.length === 0) return true;
    let end = classes.length - 1;
    while (end > 0 && classes[end] === "NSM") end--;
    if (classes[0] === "R") {
      return !classes.includes("L") && classes[end] !== "ON" &&
        !(classes.includes("EN") && classes.includes("AN"));
    }
    return classes[0] === "L" && !classes.includes("R") &&
      !classes.includes("AN") &&
      (classes[end] === "L" || classes[end] === "EN");
  }

  function isAscii(text: string): boolean {
    for (let i = 0; i < text.length; i++) {
      if (text.charCodeAt(i) > 0x7f) return false;
    }
    return true;
  }

  /** Domain to ASCII with beStrict false, or null for failure. */
  function domainToAscii(domain: string): string | null {
    const lower = domain.toLowerCase();
    if (isAscii(domain) && !/(^|\.)xn--/.test(lower)) return lower;
    const mapped = mapDomain(domain);
    if (mapped === null) return null;
    const labels: string[] = [];
    const bidi: string[][] = [];
    let rtl = false;
    for (let label of mapped.split(".")) {
      if (label.slice(0, 4) === "xn--") {
        if (!isAscii(label)) return null;
        const decoded = punycodeDecode(label.slice(4));
        if (decoded === null || isAscii(decoded)) return null;
        if (mapDomain(decoded) !== decoded) return null;
        label = decoded;
      }
      if (unicodeClass("mark").test(label)) return null;
      const classes: string[] = [];
      for (const char of label) classes.push(bidiClass(char));
      rtl ||= classes.includes("R") || classes.includes("AN");
      labels.push(label);
      bidi.push(classes);
    }
    // The bidi rules hold only in a domain with a right-to-left label.
    if (rtl && !bidi.every(passesBidi)) return null;
    return labels.map((label) =>
      isAscii(label) ? label : "xn--" + punycodeEncode(label)
    ).join(".");
  }

  // ---- The basic URL parser -------------------------------------------

  const SCHEME_START = 1, SCHEME = 2, NO_SCHEME = 3;
  const SPECIAL_RELATIVE_OR_AUTHORITY = 4, PATH_OR_AUTHORITY = 5;
  const RELATIVE = 6, RELATIVE_SLASH = 7, SPECIAL_AUTHORITY_SLASHES = 8;
  const SPECIAL_AUTHORITY_IGNORE_SLASHES = 9, AUTHORITY = 10, HOST = 11;
  const HOSTNAME = 12, PORT = 13, FILE = 14, FILE_SLASH = 15;
  const FILE_HOST = 16, PATH_START = 17, PATH_STATE = 18, OPAQUE_PATH = 19;
  const QUERY_STATE = 20, FRAGMENT_STATE = 21;

  function emptyRecord(): UrlRecord {
    return {
      scheme: "",
      username: "",
      password: "",
      host: null,
      port: null,
      path: [],
      query: null,
      fragment: null,
    };
  }

  function isAlpha(code: number): boolean {
    return (code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a);
  }

  function isWindowsDriveLetter(text: string, normalized = false): boolean {
    return text.length === 2 && isAlpha(text.charCodeAt(0)) &&
      (text[1] === ":" || (!normalized && text[1] === "|"));
  }

  /**
   * The code points of `text`, a lone surrogate as itself, in a typed array
   * of 16 bits each when none is above U+FFFF: an array of numbers held 8
   * to 16 bytes of heap per character, so a 4 MiB URL needed some 80 MiB.
   */
  function codePointsOf(text: string): Uint16Array | Uint32Array {
    let pairs = 0;
    for (let i = 0; i < text.length; i++) {
      const unit = text.charCodeAt(i);
      if (unit >= 0xd800 && unit <= 0xdbff && isPairAt(text, i)) {
        pairs++;
        i++;
      }
    }
    if (pairs === 0) {
      const units = new Uint16ArrayCtor(text.length);
      for (let i = 0; i < text.length; i++) units[i] = text.charCodeAt(i);
      return units;
    }
    const points = new Uint32ArrayCtor(text.length - pairs);
    for (let i = 0, at = 0; i < text.length; i++, at++) {
      points[at] = pointAt(text, i);
      if (points[at]! > 0xffff) i++;
    }
    return points;
  }

  /** Whether a lead surrogate at `at` is followed by a trail surrogate. */
  function isPairAt(text: string, at: number): boolean {
    const unit = text.charCodeAt(at);
    if (unit < 0xd800 || unit > 0xdbff) return false;
    const next = text.charCodeAt(at + 1);
    return next >= 0xdc00 && next <= 0xdfff;
  }

  /** Whether the code points from `at` start with a Windows drive letter. */
  function startsWithDriveLetter(
    points: ArrayLike<number>,
    at: number,
  ): boolean {
    if (points.length - at < 2) return false;
    if (!isAlpha(points[at]!)) return false;
    if (points[at + 1] !== 0x3a && points[at + 1] !== 0x7c) return false;
    const third = points.length - at === 2 ? EOF : points[at + 2]!;
    return third === EOF || third === 0x2f || third === 0x5c ||
      third === 0x3f || third === 0x23;
  }

  function shortenPath(url: UrlRecord): void {
    const path = url.path as string[];
    if (
      url.scheme === "file" && path.length === 1 &&
      isWindowsDriveLetter(path[0]!, true)
    ) return;
    path.pop();
  }

  function isSingleDot(segment: string): boolean {
    return segment === "." || segment.toLowerCase() === "%2e";
  }
  function isDoubleDot(segment: string): boolean {
    const lower = segment.toLowerCase();
    return lower === ".." || lower === ".%2e" || lower === "%2e." ||
      lower === "%2e%2e";
  }

  function copyAuthority(url: UrlRecord, base: UrlRecord): void {
    url.username = base.username;
    url.password = base.password;
    url.host = base.host;
    url.port = base.port;
  }

  function cannotHaveCredentials(url: UrlRecord): boolean {
    return url.host === null || url.host === "" || url.scheme === "file";
  }

  /**
   * The basic URL parser. Without `url` it makes a new record, or null for
   * failure; with `url` and a state override (a setter) it changes `url`
   * in place, and a failure leaves what it had not changed yet.
   */
  function parse(
    input: string,
    base: UrlRecord | null,
    url?: UrlRecord,
    override = 0,
  ): UrlRecord | null {
    if (url === undefined) {
      url = emptyRecord();
      // Leading and trailing C0 controls and spaces go.
      let start = 0, end = input.length;
      while (start < end && input.charCodeAt(start) <= 0x20) start++;
      while (end > start && input.charCodeAt(end - 1) <= 0x20) end--;
      input = input.slice(start, end);
    }
    input = input.replace(/[\t\n\r]/g, "");
    const points = codePointsOf(input);
    let state = override || SCHEME_START;
    let buffer = "";
    let atSignSeen = false, insideBrackets = false, passwordSeen = false;
    // Whether a file URL took its base's host for a path that does not
    // start with a drive letter: Deno keeps that host wherever "." and ".."
    // lead the path.
    let baseHostKept = false;
    const special = () => isSpecial(url!.scheme);
    /** A "?" or "#" starts the query or the fragment: their state. */
    const begin = (part: "query" | "fragment"): number => {
      url![part] = "";
      return part === "query" ? QUERY_STATE : FRAGMENT_STATE;
    };
    // Read once: a typed array's length is a getter call.
    const count = points.length;
    for (let at = 0; at <= count; at++) {
      const c = at < count ? points[at]! : EOF;
      const char = c === EOF ? "" : fromCodePoint(c);
      // "/", "?", "#", and "\" where the scheme is special, end a part.
      const ends = c === EOF || c === 0x2f || c === 0x3f || c === 0x23 ||
        (c === 0x5c && special());
      switch (state) {
        case SCHEME_START:
          if (isAlpha(c)) {
            buffer += char.toLowerCase();
            state = SCHEME;
          } else if (!override) {
            state = NO_SCHEME;
            at--;
          } else return null;
          break;
        case SCHEME:
          if (
            isAlpha(c) || (c >= 0x30 && c <= 0x39) || c === 0x2b ||
            c === 0x2d || c === 0x2e
          ) {
            buffer += char.toLowerCase();
          } else if (c === 0x3a) {
            if (override) {
              if (special() !== isSpecial(buffer)) return url;
              if (
                (url.username !== "" || url.password !== "" ||
                  url.port !== null) && buffer === "file"
              ) return url;
              if (url.scheme === "file" && url.host === "") return url;
              // Deno refuses to make any other URL a file URL.
              if (buffer === "file" && url.scheme !== "file") return url;
            }
            url.scheme = buffer;
            if (override) {
              if (url.port === defaultPort(url.scheme)) url.port = null;
              return url;
            }
            buffer = "";
            if (url.scheme === "file") {
              state = FILE;
            } else if (
              special() && base !== null && base.scheme === url.scheme
            ) {
              state = SPECIAL_RELATIVE_OR_AUTHORITY;
            } else if (special()) {
              state = SPECIAL_AUTHORITY_SLASHES;
            } else if (points[at + 1] === 0x2f) {
              state = PATH_OR_AUTHORITY;
              at++;
            } else {
              url.path = "";
              state = OPAQUE_PATH;
            }
          } else if (!override) {
            buffer = "";
            state = NO_SCHEME;
            at = -1;
          } else return null;
          break;
        case NO_SCHEME:
          if (base === null || (typeof base.path === "string" && c !== 0x23)) {
            return null;
          } else if (typeof base.path === "string") {
            url.scheme = base.scheme;
            url.path = base.path;
            url.query = base.query;
            url.fragment = "";
            state = FRAGMENT_STATE;
          } else {
            state = base.scheme === "file" ? FILE : RELATIVE;
            at--;
          }
          break;
        case SPECIAL_RELATIVE_OR_AUTHORITY:
          if (c === 0x2f && points[at + 1] === 0x2f) {
            state = SPECIAL_AUTHORITY_IGNORE_SLASHES;
            at++;
          } else {
            state = RELATIVE;
            at--;
          }
          break;
        case PATH_OR_AUTHORITY:
          if (c === 0x2f) state = AUTHORITY;
          else {
            state = PATH_STATE;
            at--;
          }
          break;
        case RELATIVE:
          url.scheme = base!.scheme;
          if (c === 0x2f || (c === 0x5c && special())) {
            state = RELATIVE_SLASH;
          } else {
            copyAuthority(url, base!);
            url.path = (base!.path as string[]).slice();
            url.query = base!.query;
            if (c === 0x3f) state = begin("query");
            else if (c === 0x23) state = begin("fragment");
            else if (c !== EOF) {
              url.query = null;
              shortenPath(url);
              state = PATH_STATE;
              at--;
            }
          }
          break;
        case RELATIVE_SLASH:
          if (special() && (c === 0x2f || c === 0x5c)) {
            state = SPECIAL_AUTHORITY_IGNORE_SLASHES;
          } else if (c === 0x2f) {
            state = AUTHORITY;
          } else {
            copyAuthority(url, base!);
            state = PATH_STATE;
            at--;
          }
          break;
        case SPECIAL_AUTHORITY_SLASHES:
          state = SPECIAL_AUTHORITY_IGNORE_SLASHES;
          if (c === 0x2f && points[at + 1] === 0x2f) at++;
          else at--;
          break;
        case SPECIAL_AUTHORITY_IGNORE_SLASHES:
          if (c !== 0x2f && c !== 0x5c) {
            state = AUTHORITY;
            at--;
          }
          break;
        case AUTHORITY:
          if (c === 0x40) {
            if (atSignSeen) buffer = "%40" + buffer;
            atSignSeen = true;
            for (const part of buffer) {
              if (part === ":" && !passwordSeen) {
                passwordSeen = true;
                continue;
              }
              const encoded = encodePoint(part.codePointAt(0)!, USERINFO);
              if (passwordSeen) url.password += encoded;
              else url.username += encoded;
            }
            buffer = "";
          } else if (ends) {
            if (atSignSeen && buffer === "") return null;
            let length = 0;
            for (const _ of buffer) length++;
            at -= length + 1;
            buffer = "";
            state = HOST;
          } else buffer += char;
          break;
        case HOST:
        case HOSTNAME:
          if (override && url.scheme === "file") {
            at--;
            state = FILE_HOST;
          } else if (c === 0x3a && !insideBrackets) {
            if (buffer === "" || override === HOSTNAME) return null;
            const host = parseHost(buffer, !special());
            if (host === null) return null;
            url.host = host;
            buffer = "";
            state = PORT;
          } else if (ends) {
            at--;
            if (special() && buffer === "") return null;
            if (
              override && buffer === "" &&
              (url.username !== "" || url.password !== "" || url.port !== null)
            ) return null;
            const host = parseHost(buffer, !special());
            if (host === null) return null;
            url.host = host;
            buffer = "";
            state = PATH_START;
            if (override) return url;
          } else {
            if (c === 0x5b) insideBrackets = true;
            if (c === 0x5d) insideBrackets = false;
            buffer += char;
          }
          break;
        case PORT:
          if (c >= 0x30 && c <= 0x39) {
            buffer += char;
          } else if (ends || override) {
            if (buffer !== "") {
              const port = parseInt(buffer, 10);
              if (port > 65535) return null;
              url.port = port === defaultPort(url.scheme) ? null : port;
              buffer = "";
              if (override) return url;
            }
            if (override) return null;
            state = PATH_START;
            at--;
          } else return null;
          break;
        case FILE:
          url.scheme = "file";
          url.host = "";
          if (c === 0x2f || c === 0x5c) {
            state = FILE_SLASH;
          } else if (base !== null && base.scheme === "file") {
            url.host = base.host;
            url.path = (base.path as string[]).slice();
            url.query = base.query;
            if (c === 0x3f) state = begin("query");
            else if (c === 0x23) state = begin("fragment");
            else if (c !== EOF) {
              url.query = null;
              baseHostKept = !startsWithDriveLetter(points, at);
              if (baseHostKept) shortenPath(url);
              else url.path = [];
              state = PATH_STATE;
              at--;
            }
          } else {
            state = PATH_STATE;
            at--;
          }
          break;
        case FILE_SLASH:
          if (c === 0x2f || c === 0x5c) {
            state = FILE_HOST;
          } else {
            if (base !== null && base.scheme === "file") {
              url.host = base.host;
              baseHostKept = !startsWithDriveLetter(points, at);
              const first = (base.path as string[])[0];
              if (
                baseHostKept && first !== undefined &&
                isWindowsDriveLetter(first, true)
              ) (url.path as string[]).push(first);
            }
            state = PATH_STATE;
            at--;
          }
          break;
        case FILE_HOST:
          if (
            c === EOF || c === 0x2f || c === 0x5c || c === 0x3f || c === 0x23
          ) {
            at--;
            if (!override && isWindowsDriveLetter(buffer)) {
              // "file://C:/" is a path: the buffer becomes its first segment.
              state = PATH_STATE;
            } else if (buffer === "") {
              // Deno's host setter leaves a file URL alone for "/x".
              if (override && c !== EOF) return null;
              url.host = "";
              if (override) return url;
              state = PATH_START;
            } else {
              let host = parseHost(buffer, false);
              if (host === null) return null;
              if (host === "localhost") host = "";
              url.host = host;
              if (override) return url;
              buffer = "";
              state = PATH_START;
            }
          } else buffer += char;
          break;
        case PATH_START:
          if (special()) {
            state = PATH_STATE;
            if (c !== 0x2f && c !== 0x5c) at--;
          } else if (!override && c === 0x3f) state = begin("query");
          else if (!override && c === 0x23) state = begin("fragment");
          else if (c !== EOF) {
            state = PATH_STATE;
            if (c !== 0x2f) at--;
          } else if (override && url.host === null) {
            (url.path as string[]).push("");
          }
          break;
        case PATH_STATE:
          if (
            c === EOF || c === 0x2f || (c === 0x5c && special()) ||
            (!override && (c === 0x3f || c === 0x23))
          ) {
            const slash = c === 0x2f || (c === 0x5c && special());
            const path = url.path as string[];
            if (isDoubleDot(buffer)) {
              shortenPath(url);
              if (!slash) path.push("");
            } else if (isSingleDot(buffer) && !slash) {
              path.push("");
            } else if (!isSingleDot(buffer)) {
              if (
                url.scheme === "file" && path.length === 0 &&
                isWindowsDriveLetter(buffer)
              ) {
                // As Deno's parser does (and the standard did until 2021), a
                // drive letter clears the host: "file://h/C:/" is "file:///C:/",
                // though "../C:" against "file://h/x/" is "file://h/C:".
                if (!override && url.host !== null && !baseHostKept) {
                  url.host = "";
                }
                buffer = buffer[0] + ":";
              }
              path.push(buffer);
            }
            buffer = "";
            // As Deno does (and the standard did until 2021), a file path
            // loses its leading empty segments: "file://h//x" is "file://h/x".
            if (url.scheme === "file" && !slash) {
              while (path.length > 1 && path[0] === "") path.shift();
            }
            if (c === 0x3f) state = begin("query");
            else if (c === 0x23) state = begin("fragment");
          } else buffer += encodePoint(c, PATH);
          break;
        case OPAQUE_PATH:
          if (c === 0x3f) state = begin("query");
          else if (c === 0x23) state = begin("fragment");
          else if (c !== EOF) url.path += encodePoint(c, C0);
          break;
        case QUERY_STATE:
          if (!override && c === 0x23) state = begin("fragment");
          else if (c !== EOF) {
            url.query += encodePoint(c, special() ? SPECIAL_QUERY : QUERY);
          }
          break;
        case FRAGMENT_STATE:
          if (c !== EOF) url.fragment += encodePoint(c, FRAGMENT);
          break;
      }
    }
    return url;
  }

  function serializePath(url: UrlRecord): string {
    if (typeof url.path === "string") return url.path;
    let out = "";
    for (const segment of url.path) out += "/" + segment;
    return out;
  }

  function serialize(url: UrlRecord, excludeFragment = false): string {
    let out = url.scheme + ":";
    if (url.host !== null) {
      out += "//";
      if (url.username !== "" || url.password !== "") {
        out += url.username;
        if (url.password !== "") out += ":" + url.password;
        out += "@";
      }
      out += url.host;
      if (url.port !== null) out += ":" + url.port;
    } else if (
      typeof url.path !== "string" && url.path.length > 1 && url.path[0] === ""
    ) out += "/.";
    out += serializePath(url);
    if (url.query !== null) out += "?" + url.query;
    if (!excludeFragment && url.fragment !== null) out += "#" + url.fragment;
    return out;
  }

  function originOf(url: UrlRecord): string {
    if (url.scheme === "blob") {
      const inner = parse(serializePath(url), null);
      return inner === null ? "null" : originOf(inner);
    }
    if (url.scheme === "file" || !isSpecial(url.scheme)) return "null";
    return url.scheme + "://" + url.host +
      (url.port === null ? "" : ":" + url.port);
  }

  // ---- application/x-www-form-urlencoded ------------------------------

  function parseForm(input: string): [string, string][] {
    const list: [string, string][] = [];
    for (const sequence of input.split("&")) {
      if (sequence === "") continue;
      const equals = sequence.indexOf("=");
      const name = equals < 0 ? sequence : sequence.slice(0, equals);
      const value = equals < 0 ? "" : sequence.slice(equals + 1);
      list.push([
        percentDecode(name.replace(/\+/g, " ")),
        percentDecode(value.replace(/\+/g, " ")),
      ]);
    }
    return list;
  }

  function serializeForm(list: [string, string][]): string {
    let out = "";
    for (let i = 0; i < list.length; i++) {
      if (i > 0) out += "&";
      out += encodeText(list[i]![0], FORM, true) + "=" +
        encodeText(list[i]![1], FORM, true);
    }
    return out;
  }

  // ---- URL and URLSearchParams ------------------------------------------

  // Internal state lives in weak maps rather than private fields, so no
  // bundler rewrites it into helpers outside this self-contained function;
  // a method called on another object finds nothing and throws.
  interface UrlState {
    url: UrlRecord;
    /** Made when the guest first reads `searchParams`. */
    params: object | null;
  }
  interface ParamsState {
    list: [string, string][];
    owner: UrlState | null;
  }
  const urls = new WeakMapCtor<object, UrlState>();
  const params = new WeakMapCtor<object, ParamsState>();

  function urlOf(target: unknown): UrlState {
    const state = urls.get(target as object);
    if (state === undefined) throw new TypeErrorCtor("Illegal invocation");
    return state;
  }
  function paramsOf(target: unknown): ParamsState {
    const state = params.get(target as object);
    if (state === undefined) {
      throw new TypeErrorCtor(
        'Value of "this" must be of type URLSearchParams',
      );
    }
    return state;
  }

  function required(count: number, needed: number, what: string): void {
    if (count < needed) {
      throw new TypeErrorCtor(
        needed === 1
          ? `The "${what}" argument must be specified`
          : `The "${what}" and "value" arguments must be specified`,
      );
    }
  }

  /** Parses `url` against `base` as the constructor does, or null. */
  function parseWithBase(url: string, base?: string): UrlRecord | null {
    let baseRecord: UrlRecord | null = null;
    if (base !== undefined) {
      baseRecord = parse(usv(base), null);
      if (baseRecord === null) return null;
    }
    return parse(usv(url), baseRecord);
  }

  /** Web IDL's conversion of an optional string: once, as Deno does. */
  function optionalText(value: unknown): string | undefined {
    return value === undefined ? undefined : stringOf(value);
  }

  /** Deno's error, which quotes the input as given, before USV conversion. */
  function invalid(url: string, base: string | undefined): TypeError {
    return new TypeErrorCtor(
      base === undefined
        ? `Invalid URL: '${url}'`
        : `Invalid URL: '${url}' with base '${base}'`,
    );
  }

  /** A URL's query changed: its `searchParams` list follows. */
  function queryChanged(state: UrlState): void {
    if (state.params !== null) {
      params.get(state.params)!.list = parseForm(state.url.query ?? "");
    }
  }

  /** A `searchParams` list changed: its URL's query follows. */
  function listChanged(state: ParamsState): void {
    if (state.owner === null) return;
    const url = state.owner.url;
    const query = serializeForm(state.list);
    url.query = query === "" ? null : query;
    if (query === "") stripOpaqueSpaces(url);
  }

  function stripOpaqueSpaces(url: UrlRecord): void {
    if (
      typeof url.path === "string" && url.fragment === null &&
      url.query === null
    ) url.path = url.path.replace(/ +$/, "");
  }

  class URLClass {
    constructor(url: unknown, base: unknown = undefined) {
      if (arguments.length === 0) {
        throw new TypeErrorCtor(
          "Failed to construct 'URL': 1 argument required, but only 0 present",
        );
      }
      const text = stringOf(url);
      const baseText = optionalText(base);
      const record = parseWithBase(text, baseText);
      if (record === null) throw invalid(text, baseText);
      urls.set(this, { url: record, params: null });
    }
    static canParse(url: unknown, base: unknown = undefined): boolean {
      if (arguments.length === 0) {
        throw new TypeErrorCtor(
          "Failed to execute 'URL.canParse': 1 argument required, but only 0 present",
        );
      }
      return parseWithBase(stringOf(url), optionalText(base)) !== null;
    }
    static parse(url: unknown, base: unknown = undefined): URLClass | null {
      if (arguments.length === 0) {
        throw new TypeErrorCtor(
          "Failed to execute 'URL.parse': 1 argument required, but only 0 present",
        );
      }
      const record = parseWithBase(stringOf(url), optionalText(base));
      if (record === null) return null;
      const made = create(URLClass.prototype) as URLClass;
      urls.set(made, { url: record, params: null });
      return made;
    }
    get href(): string {
      return serialize(urlOf(this).url);
    }
    set href(value: string) {
      const state = urlOf(this);
      const text = stringOf(value);
      const record = parse(usv(text), null);
      if (record === null) throw invalid(text, undefined);
      state.url = record;
      queryChanged(state);
    }
    get origin(): string {
      return originOf(urlOf(this).url);
    }
    get protocol(): string {
      return urlOf(this).url.scheme + ":";
    }
    set protocol(value: string) {
      const state = urlOf(this);
      const text = usv(value);
      parse(text + ":", null, state.url, SCHEME_START);
    }
    get username(): string {
      return urlOf(this).url.username;
    }
    set username(value: string) {
      const state = urlOf(this);
      const text = usv(value);
      const url = state.url;
      if (!cannotHaveCredentials(url)) {
        url.username = encodeText(text, USERINFO);
      }
    }
    get password(): string {
      return urlOf(this).url.password;
    }
    set password(value: string) {
      const state = urlOf(this);
      const text = usv(value);
      const url = state.url;
      if (!cannotHaveCredentials(url)) {
        url.password = encodeText(text, USERINFO);
      }
    }
    get host(): string {
      const url = urlOf(this).url;
      if (url.host === null) return "";
      return url.port === null ? url.host : url.host + ":" + url.port;
    }
    set host(value: string) {
      const state = urlOf(this);
      const text = usv(value);
      const url = state.url;
      if (typeof url.path !== "string") parse(text, null, url, HOST);
    }
    get hostname(): string {
      return urlOf(this).url.host ?? "";
    }
    set hostname(value: string) {
      const state = urlOf(this);
      const text = usv(value);
      const url = state.url;
      if (typeof url.path !== "string") parse(text, null, url, HOSTNAME);
    }
    get port(): string {
      const port = urlOf(this).url.port;
      return port === null ? "" : "" + port;
    }
    set port(value: string) {
      const state = urlOf(this);
      const text = usv(value);
      const url = state.url;
      if (cannotHaveCredentials(url)) return;
      if (text === "") url.port = null;
      else parse(text, null, url, PORT);
    }
    get pathname(): string {
      return serializePath(urlOf(this).url);
    }
    set pathname(value: string) {
      const state = urlOf(this);
      const text = usv(value);
      const url = state.url;
      if (typeof url.path === "string") return;
      url.path = [];
      parse(text, null, url, PATH_START);
    }
    get search(): string {
      const query = urlOf(this).url.query;
      return query === null || query === "" ? "" : "?" + query;
    }
    set search(value: string) {
      const state = urlOf(this);
      const text = usv(value);
      const url = state.url;
      if (text === "") {
        url.query = null;
        stripOpaqueSpaces(url);
      } else {
        url.query = "";
        parse(text[0] === "?" ? text.slice(1) : text, null, url, QUERY_STATE);
      }
      queryChanged(state);
    }
    get searchParams(): URLSearchParams {
      const state = urlOf(this);
      if (state.params === null) {
        state.params = create(URLSearchParamsClass.prototype) as object;
        params.set(state.params, {
          list: parseForm(state.url.query ?? ""),
          owner: state,
        });
      }
      return state.params as URLSearchParams;
    }
    get hash(): string {
      const fragment = urlOf(this).url.fragment;
      return fragment === null || fragment === "" ? "" : "#" + fragment;
    }
    set hash(value: string) {
      const state = urlOf(this);
      const text = usv(value);
      const url = state.url;
      if (text === "") {
        url.fragment = null;
        stripOpaqueSpaces(url);
        return;
      }
      url.fragment = "";
      parse(text[0] === "#" ? text.slice(1) : text, null, url, FRAGMENT_STATE);
    }
    toString(): string {
      return serialize(urlOf(this).url);
    }
    toJSON(): string {
      return serialize(urlOf(this).url);
    }
  }

  /** `value`'s own iteration, read once, or a `TypeError` saying `why`. */
  function iterableOf(value: unknown, why: string): Iterable<unknown> {
    const method = (value as Record<symbol, unknown>)[iteratorSymbol];
    if (typeof method !== "function") throw new TypeErrorCtor(why);
    return {
      [iteratorSymbol]: () => apply(method, value, []) as Iterator<unknown>,
    };
  }

  /** A pair from an init sequence: an iterable of exactly two strings. */
  function pairOf(item: unknown): [string, string] {
    const badPair = "Each query pair must be an iterable [name, value] tuple";
    if (
      (typeof item !== "object" && typeof item !== "function") || item === null
    ) throw new TypeErrorCtor(badPair);
    const parts: string[] = [];
    for (const part of iterableOf(item, badPair)) parts.push(usv(part));
    if (parts.length !== 2) throw new TypeErrorCtor(badPair);
    return [parts[0]!, parts[1]!];
  }

  function initList(init: unknown): [string, string][] {
    if (
      (typeof init === "object" && init !== null) || typeof init === "function"
    ) {
      const method = (init as Record<symbol, unknown>)[iteratorSymbol];
      if (method !== undefined && method !== null) {
        const items: unknown[] = [];
        for (const item of iterableOf(init, "Query pairs must be iterable")) {
          items.push(item);
        }
        const list: [string, string][] = [];
        for (const item of items) list.push(pairOf(item));
        return list;
      }
      // A record: own enumerable keys, in their order.
      const list: [string, string][] = [];
      for (const key of ownKeys(init)) {
        const descriptor = getOwnPropertyDescriptor(init, key);
        if (descriptor === undefined || !descriptor.enumerable) continue;
        const name = usv(key);
        list.push([name, usv((init as Record<PropertyKey, unknown>)[key])]);
      }
      return list;
    }
    const text = usv(init);
    return parseForm(text[0] === "?" ? text.slice(1) : text);
  }

  /** A stable sort by name, comparing UTF-16 code units. */
  function sortPairs(list: [string, string][]): [string, string][] {
    if (list.length < 2) return list;
    const middle = list.length >> 1;
    const left = sortPairs(list.slice(0, middle));
    const right = sortPairs(list.slice(middle));
    const out: [string, string][] = [];
    let i = 0, j = 0;
    while (i < left.length && j < right.length) {
      out.push(right[j]![0] < left[i]![0] ? right[j++]! : left[i++]!);
    }
    while (i < left.length) out.push(left[i++]!);
    while (j < right.length) out.push(right[j++]!);
    return out;
  }

  class URLSearchParamsClass {
    constructor(init: unknown = "") {
      params.set(this, { list: initList(init), owner: null });
    }
    append(name: unknown, value: unknown): void {
      const state = paramsOf(this);
      required(arguments.length, 2, "name");
      // Both converted before the list is read: a toString() may replace it.
      const pair: [string, string] = [usv(name), usv(value)];
      state.list.push(pair);
      listChanged(state);
    }
    delete(name: unknown, value: unknown = undefined): void {
      const state = paramsOf(this);
      required(arguments.length, 1, "name");
      const key = usv(name);
      const match = value === undefined ? undefined : usv(value);
      state.list = state.list.filter(([n, v]) =>
        n !== key || (match !== undefined && v !== match)
      );
      listChanged(state);
    }
    get(name: unknown): string | null {
      const state = paramsOf(this);
      required(arguments.length, 1, "name");
      const key = usv(name);
      for (const pair of state.list) if (pair[0] === key) return pair[1];
      return null;
    }
    getAll(name: unknown): string[] {
      const state = paramsOf(this);
      required(arguments.length, 1, "name");
      const key = usv(name);
      const out: string[] = [];
      for (const pair of state.list) if (pair[0] === key) out.push(pair[1]);
      return out;
    }
    has(name: unknown, value: unknown = undefined): boolean {
      const state = paramsOf(this);
      required(arguments.length, 1, "name");
      const key = usv(name);
      const match = value === undefined ? undefined : usv(value);
      for (const [n, v] of state.list) {
        if (n === key && (match === undefined || v === match)) return true;
      }
      return false;
    }
    set(name: unknown, value: unknown): void {
      const state = paramsOf(this);
      required(arguments.length, 2, "name");
      const key = usv(name);
      const text = usv(value);
      const at = state.list.findIndex((pair) => pair[0] === key);
      if (at < 0) state.list.push([key, text]);
      else {
        state.list[at] = [key, text];
        state.list = state.list.filter((pair, i) => i <= at || pair[0] !== key);
      }
      listChanged(state);
    }
    sort(): void {
      const state = paramsOf(this);
      state.list = sortPairs(state.list);
      listChanged(state);
    }
    toString(): string {
      return serializeForm(paramsOf(this).list);
    }
    get size(): number {
      return paramsOf(this).list.length;
    }
    entries(): IterableIterator<[string, string]> {
      return iterate(this, 2);
    }
    keys(): IterableIterator<string> {
      return iterate(this, 0);
    }
    values(): IterableIterator<string> {
      return iterate(this, 1);
    }
    forEach(
      callback: (value: string, name: string, parent: unknown) => void,
      thisArg: unknown = undefined,
    ): void {
      const state = paramsOf(this);
      if (typeof callback !== "function") {
        throw new TypeErrorCtor(
          `The "callback" argument must be of type function. Received ${
            callback === null ? "null" : typeof callback
          }`,
        );
      }
      // The list is read live: what the callback adds is visited too.
      for (let i = 0; i < state.list.length; i++) {
        const pair = state.list[i]!;
        apply(callback, thisArg, [pair[1], pair[0], this]);
      }
    }
  }

  /** The iterators' prototype: `next` over a live list, by index. */
  interface IteratorState {
    target: ParamsState;
    kind: number;
    index: number;
  }
  const iterators = new WeakMapCtor<object, IteratorState>();
  const iteratorProto = create(iteratorPrototype) as object;
  const next = {
    next(this: unknown): IteratorResult<unknown> {
      const state = iterators.get(this as object);
      if (state === undefined) {
        throw new TypeErrorCtor(
          'Value of "this" must be of type URLSearchParamsIterator',
        );
      }
      const pair = state.target.list[state.index];
      if (pair === undefined) return { value: undefined, done: true };
      state.index++;
      return {
        value: state.kind === 2 ? [pair[0], pair[1]] : pair[state.kind],
        done: false,
      };
    },
  }.next;
  defineProperty(iteratorProto, "next", {
    value: next,
    writable: true,
    enumerable: true,
    configurable: true,
  });
  defineProperty(iteratorProto, tagSymbol, {
    value: "URLSearchParams Iterator",
    configurable: true,
  });

  function iterate<T>(target: unknown, kind: number): IterableIterator<T> {
    const state = paramsOf(target);
    const iterator = create(iteratorProto) as object;
    iterators.set(iterator, { target: state, kind, index: 0 });
    return iterator as IterableIterator<T>;
  }

  // Members as Web IDL lays them out: enumerable, with the platform's names.
  for (
    const [ctor, name] of [
      [URLClass, "URL"],
      [URLSearchParamsClass, "URLSearchParams"],
    ] as const
  ) {
    defineProperty(ctor, "name", { value: name });
    for (const target of [ctor, ctor.prototype]) {
      for (const key of ownKeys(target)) {
        if (key === "prototype" || key === "constructor") continue;
        const descriptor = getOwnPropertyDescriptor(target, key)!;
        if (key === "length" || key === "name") continue;
        descriptor.enumerable = true;
        defineProperty(target, key, descriptor);
      }
    }
    defineProperty(ctor.prototype, tagSymbol, {
      value: name,
      configurable: true,
    });
  }
  defineProperty(URLSearchParamsClass.prototype, iteratorSymbol, {
    value: URLSearchParamsClass.prototype.entries,
    writable: true,
    configurable: true,
  });
  return {
    URL: URLClass as unknown as typeof URL,
    URLSearchParams: URLSearchParamsClass as unknown as typeof URLSearchParams,
  };
}
