// This module is browser compatible.

/**
 * Text and base64 for a realm whose engine has no host Web APIs (QuickJS):
 * `DOMException`, UTF-8 `TextEncoder`, a `TextDecoder` of UTF-8 and UTF-16
 * (WHATWG Encoding) and `atob`/`btoa` (HTML's forgiving base64), so that
 * packs such as MessagePack or protobuf encoders and guest code give the
 * answers they give in a browser or on the worker tier. Pure computation:
 * nothing here reaches the host. Runs inside a realm: self-contained,
 * turned into source by `realm/realm_source.ts`, and frozen by the realm's
 * lockdown with every other intrinsic.
 *
 * @module
 */

/** What {@linkcode createWebText} makes, by global name. */
export interface WebText {
  DOMException: typeof DOMException;
  TextEncoder: typeof TextEncoder;
  TextDecoder: typeof TextDecoder;
  atob: (data: string) => string;
  btoa: (data: string) => string;
  /** Base64 with padding of bytes, for realm helpers (not a global). */
  encodeBase64: (bytes: Uint8Array) => string;
  /** Forgiving base64 to bytes, for realm helpers (not a global). */
  decodeBase64: (text: string) => Uint8Array;
}

/**
 * Makes the realm's `DOMException`, `TextEncoder`, `TextDecoder`, `atob` and
 * `btoa`. Self-contained: it captures the intrinsics it uses when it is
 * called. `TextDecoder` knows UTF-8 and UTF-16 (little and big endian;
 * Emscripten's output makes a `utf-16le` decoder when it loads); another
 * label is a `RangeError` that says so.
 *
 * @returns The constructors and functions, by global name.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createWebText } from "./web_text.ts";
 *
 * const { TextEncoder, TextDecoder, atob, btoa } = createWebText();
 * const bytes = new TextEncoder().encode("héllo ✓");
 * assert.equal(new TextDecoder().decode(bytes), "héllo ✓");
 * assert.equal(atob(btoa("\u00ff")), "\u00ff");
 * ```
 */
export function createWebText(): WebText {
  "use strict";
  const { defineProperty, getOwnPropertyDescriptor, getPrototypeOf, hasOwn } =
    Object;
  const fromCharCode = String.fromCharCode;
  const { apply } = Reflect;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const RangeErrorCtor = RangeError;
  const Uint8ArrayCtor = Uint8Array;
  const WeakMapCtor = WeakMap;
  const isView = ArrayBuffer.isView;
  const bufferByteLength = getOwnPropertyDescriptor(
    ArrayBuffer.prototype,
    "byteLength",
  )!.get!;
  const SharedBuffer = (globalThis as { SharedArrayBuffer?: unknown })
    .SharedArrayBuffer as SharedArrayBufferConstructor | undefined;
  const sharedByteLength = SharedBuffer === undefined
    ? undefined
    : getOwnPropertyDescriptor(SharedBuffer.prototype, "byteLength")?.get;
  // A view's own properties may shadow these getters: read its slots.
  const getterOf = (proto: object, key: PropertyKey) =>
    getOwnPropertyDescriptor(proto, key)!.get!;
  const typedArrayProto = getPrototypeOf(Uint8Array.prototype) as object;
  const typedArrayTag = getterOf(typedArrayProto, Symbol.toStringTag);
  const typedArrayBuffer = getterOf(typedArrayProto, "buffer");
  const typedArrayOffset = getterOf(typedArrayProto, "byteOffset");
  const typedArrayBytes = getterOf(typedArrayProto, "byteLength");
  const typedArrayLength = getterOf(typedArrayProto, "length");
  const dataViewBuffer = getterOf(DataView.prototype, "buffer");
  const dataViewOffset = getterOf(DataView.prototype, "byteOffset");
  const dataViewBytes = getterOf(DataView.prototype, "byteLength");

  const LEGACY_CODES: Record<string, number> = {
    IndexSizeError: 1,
    HierarchyRequestError: 3,
    WrongDocumentError: 4,
    InvalidCharacterError: 5,
    NoModificationAllowedError: 7,
    NotFoundError: 8,
    NotSupportedError: 9,
    InvalidStateError: 11,
    SyntaxError: 12,
    InvalidModificationError: 13,
    NamespaceError: 14,
    InvalidAccessError: 15,
    TypeMismatchError: 17,
    SecurityError: 18,
    NetworkError: 19,
    AbortError: 20,
    URLMismatchError: 21,
    QuotaExceededError: 22,
    TimeoutError: 23,
    InvalidNodeTypeError: 24,
    DataCloneError: 25,
  };

  // Internal state lives in weak maps rather than private fields, so no
  // bundler rewrites it into helpers outside this self-contained function;
  // a method called on another object finds nothing and throws.
  const exceptionNames = new WeakMapCtor<object, string>();
  function nameOf(exception: object): string {
    const name = exceptionNames.get(exception);
    if (name === undefined) throw illegalInvocation();
    return name;
  }
  function illegalInvocation(): TypeError {
    return new TypeErrorCtor("Illegal invocation");
  }

  class DOMExceptionClass extends ErrorCtor {
    constructor(message: unknown = "", name: unknown = "Error") {
      super(`${message}`);
      exceptionNames.set(this, `${name}`);
    }
    override get name(): string {
      return nameOf(this);
    }
    get code(): number {
      const name = nameOf(this);
      return hasOwn(LEGACY_CODES, name) ? LEGACY_CODES[name]! : 0;
    }
  }
  // The legacy constants, by code, on the constructor and its prototype.
  const LEGACY_CONSTANTS = [
    "INDEX_SIZE_ERR",
    "DOMSTRING_SIZE_ERR",
    "HIERARCHY_REQUEST_ERR",
    "WRONG_DOCUMENT_ERR",
    "INVALID_CHARACTER_ERR",
    "NO_DATA_ALLOWED_ERR",
    "NO_MODIFICATION_ALLOWED_ERR",
    "NOT_FOUND_ERR",
    "NOT_SUPPORTED_ERR",
    "INUSE_ATTRIBUTE_ERR",
    "INVALID_STATE_ERR",
    "SYNTAX_ERR",
    "INVALID_MODIFICATION_ERR",
    "NAMESPACE_ERR",
    "INVALID_ACCESS_ERR",
    "VALIDATION_ERR",
    "TYPE_MISMATCH_ERR",
    "SECURITY_ERR",
    "NETWORK_ERR",
    "ABORT_ERR",
    "URL_MISMATCH_ERR",
    "QUOTA_EXCEEDED_ERR",
    "TIMEOUT_ERR",
    "INVALID_NODE_TYPE_ERR",
    "DATA_CLONE_ERR",
  ];
  for (let code = 1; code <= LEGACY_CONSTANTS.length; code++) {
    for (const target of [DOMExceptionClass, DOMExceptionClass.prototype]) {
      defineProperty(target, LEGACY_CONSTANTS[code - 1]!, {
        value: code,
        enumerable: true,
      });
    }
  }

  const UTF8_LABELS = [
    "unicode-1-1-utf-8",
    "unicode11utf8",
    "unicode20utf8",
    "utf-8",
    "utf8",
    "x-unicode20utf8",
  ];

  const UTF16LE_LABELS = [
    "csunicode",
    "iso-10646-ucs-2",
    "ucs-2",
    "unicode",
    "unicodefeff",
    "utf-16",
    "utf-16le",
  ];
  const UTF16BE_LABELS = ["unicodefffe", "utf-16be"];

  /** The encoding a label names, of those this decoder knows. */
  function encodingOf(label: string): Encoding | undefined {
    const name = trimAsciiSpace(label).toLowerCase();
    if (UTF8_LABELS.includes(name)) return "utf-8";
    if (UTF16LE_LABELS.includes(name)) return "utf-16le";
    if (UTF16BE_LABELS.includes(name)) return "utf-16be";
    return undefined;
  }

  function isAsciiSpace(code: number): boolean {
    return code === 9 || code === 10 || code === 12 || code === 13 ||
      code === 32;
  }

  function trimAsciiSpace(text: string): string {
    let start = 0;
    let end = text.length;
    while (start < end && isAsciiSpace(text.charCodeAt(start))) start++;
    while (end > start && isAsciiSpace(text.charCodeAt(end - 1))) end--;
    return text.slice(start, end);
  }

  function isUint8Array(value: unknown): value is Uint8Array {
    return isView(value) && apply(typedArrayTag, value, []) === "Uint8Array";
  }

  /**
   * An ArrayBuffer's or a SharedArrayBuffer's byte length, read through its
   * slot; `undefined` for anything else.
   */
  function bufferLength(input: unknown): number | undefined {
    for (const byteLength of [bufferByteLength, sharedByteLength]) {
      if (byteLength === undefined) continue;
      try {
        return apply(byteLength, input, []);
      } catch {
        // Not this kind of buffer.
      }
    }
    return undefined;
  }

  /**
   * Refuses with Web IDL's `TypeError` what is no BufferSource, before the
   * options are read; the bytes are read after them, as a getter there
   * may resize or detach the buffer.
   */
  function checkBufferSource(input: unknown): void {
    if (isView(input) || bufferLength(input) !== undefined) return;
    throw new TypeErrorCtor(
      "Failed to execute 'decode' on 'TextDecoder': Argument 1 is not an ArrayBuffer, SharedArrayBuffer, or a view on one",
    );
  }

  /**
   * The bytes of a BufferSource that `checkBufferSource` let through, as
   * they are now, without copying, read through its slots; none when it is
   * detached.
   */
  function bytesOf(input: unknown): Uint8Array {
    if (isView(input)) {
      const typed = apply(typedArrayTag, input, []) !== undefined;
      // A DataView whose buffer is detached or too short has no length.
      let length = 0;
      try {
        length = apply(typed ? typedArrayBytes : dataViewBytes, input, []);
      } catch {
        // Detached or out of bounds: nothing to read.
      }
      if (length === 0) return new Uint8ArrayCtor(0);
      return new Uint8ArrayCtor(
        apply(typed ? typedArrayBuffer : dataViewBuffer, input, []),
        apply(typed ? typedArrayOffset : dataViewOffset, input, []),
        length,
      );
    }
    return bufferLength(input) === 0
      ? new Uint8ArrayCtor(0)
      : new Uint8ArrayCtor(input as ArrayBuffer);
  }

  /** UTF-8 byte count of a string, a lone surrogate counting as U+FFFD. */
  function utf8Length(text: string): number {
    let size = 0;
    for (let i = 0; i < text.length; i++) {
      const unit = text.charCodeAt(i);
      if (unit < 0x80) size += 1;
      else if (unit < 0x800) size += 2;
      else if (unit >= 0xd800 && unit <= 0xdbff && isTrail(text, i + 1)) {
        size += 4;
        i++;
      } else size += 3;
    }
    return size;
  }

  function isTrail(text: string, at: number): boolean {
    const unit = text.charCodeAt(at);
    return unit >= 0xdc00 && unit <= 0xdfff;
  }

  /** The code point at `at`, with a lone surrogate read as U+FFFD. */
  function scalarAt(text: string, at: number): number {
    const unit = text.charCodeAt(at);
    if (unit < 0xd800 || unit > 0xdfff) return unit;
    if (unit <= 0xdbff && isTrail(text, at + 1)) {
      return 0x10000 + ((unit - 0xd800) << 10) +
        (text.charCodeAt(at + 1) - 0xdc00);
    }
    return 0xfffd;
  }

  /** Writes one code point's UTF-8 bytes at `at`; returns the next index. */
  function putUtf8(out: Uint8Array, at: number, point: number): number {
    if (point < 0x80) {
      out[at] = point;
      return at + 1;
    }
    if (point < 0x800) {
      out[at] = 0xc0 | (point >> 6);
      out[at + 1] = 0x80 | (point & 0x3f);
      return at + 2;
    }
    if (point < 0x10000) {
      out[at] = 0xe0 | (point >> 12);
      out[at + 1] = 0x80 | ((point >> 6) & 0x3f);
      out[at + 2] = 0x80 | (point & 0x3f);
      return at + 3;
    }
    out[at] = 0xf0 | (point >> 18);
    out[at + 1] = 0x80 | ((point >> 12) & 0x3f);
    out[at + 2] = 0x80 | ((point >> 6) & 0x3f);
    out[at + 3] = 0x80 | (point & 0x3f);
    return at + 4;
  }

  function utf8Size(point: number): number {
    return point < 0x80 ? 1 : point < 0x800 ? 2 : point < 0x10000 ? 3 : 4;
  }

  const encoders = new WeakMapCtor<object, true>();
  function checkEncoder(encoder: object): void {
    if (!encoders.has(encoder)) throw illegalInvocation();
  }

  class TextEncoderClass {
    constructor() {
      encoders.set(this, true);
    }
    get encoding(): string {
      checkEncoder(this);
      return "utf-8";
    }
    encode(input: unknown = ""): Uint8Array {
      checkEncoder(this);
      const text = `${input}`;
      const out = new Uint8ArrayCtor(utf8Length(text));
      let at = 0;
      for (let i = 0; i < text.length; i++) {
        const point = scalarAt(text, i);
        if (point > 0xffff) i++;
        at = putUtf8(out, at, point);
      }
      return out;
    }
    encodeInto(
      source: unknown,
      destination: Uint8Array,
    ): { read: number; written: number } {
      checkEncoder(this);
      const text = `${source}`;
      if (!isUint8Array(destination)) {
        throw new TypeErrorCtor(
          "Failed to execute 'encodeInto' on 'TextEncoder': Argument 2 is not an Uint8Array object",
        );
      }
      const room: number = apply(typedArrayLength, destination, []);
      let read = 0;
      let written = 0;
      while (read < text.length) {
        const point = scalarAt(text, read);
        const size = utf8Size(point);
        if (written + size > room) break;
        written = putUtf8(destination, written, point);
        read += point > 0xffff ? 2 : 1;
      }
      return { read, written };
    }
  }

  /**
   * Collects UTF-16 code units and joins them in chunks. With `skipBom`, a
   * U+FEFF that comes first is dropped.
   */
  class TextSink {
    units: number[];
    parts: string[];
    started: boolean;
    skipBom: boolean;
    constructor(skipBom = false) {
      this.units = [];
      this.parts = [];
      this.started = false;
      this.skipBom = skipBom;
    }
    push(point: number): void {
      if (!this.started) {
        this.started = true;
        if (this.skipBom && point === 0xfeff) return;
      }
      if (point > 0xffff) {
        point -= 0x10000;
        this.units.push(0xd800 + (point >> 10), 0xdc00 + (point & 0x3ff));
      } else {
        this.units.push(point);
      }
      if (this.units.length >= 8192) this.flush();
    }
    /** Appends `bytes[from]` to `bytes[to - 1]`, all below 0x80, at once. */
    ascii(bytes: Uint8Array, from: number, to: number): void {
      this.started = true;
      this.flush();
      for (let at = from; at < to; at += 8192) {
        const end = to - at > 8192 ? at + 8192 : to;
        const run = new Uint8ArrayCtor(
          apply(typedArrayBuffer, bytes, []) as ArrayBuffer,
          (apply(typedArrayOffset, bytes, []) as number) + at,
          end - at,
        );
        this.parts.push(apply(fromCharCode, null, run) as string);
      }
    }
    flush(): void {
      if (this.units.length === 0) return;
      this.parts.push(apply(fromCharCode, null, this.units) as string);
      this.units = [];
    }
    text(): string {
      this.flush();
      return this.parts.join("");
    }
  }

  /** Where a UTF-8 sequence stands between two `decode` calls. */
  interface Utf8State {
    needed: number;
    seen: number;
    point: number;
    lower: number;
    upper: number;
  }

  function freshState(): Utf8State {
    return { needed: 0, seen: 0, point: 0, lower: 0x80, upper: 0xbf };
  }

  /**
   * Where a UTF-16 stream stands between two `decode` calls (-1: none):
   * a byte, a lead surrogate, and a unit to read first (what a fatal
   * decoder read after a lead surrogate an earlier call began).
   */
  interface Utf16State {
    leadByte: number;
    leadSurrogate: number;
    kept: number;
  }

  function freshUtf16State(): Utf16State {
    return { leadByte: -1, leadSurrogate: -1, kept: -1 };
  }

  /**
   * WHATWG's UTF-8 decoder over `bytes`, from and into `state`. A byte
   * that breaks a sequence is an error (U+FFFD, or a throw when `fatal`)
   * and is read again as the start of the next one.
   */
  function decodeUtf8(
    bytes: Uint8Array,
    state: Utf8State,
    sink: TextSink,
    options: { fatal: boolean; flush: boolean },
  ): void {
    let { needed, seen, point, lower, upper } = state;
    const error = () => {
      if (options.fatal) {
        throw new TypeErrorCtor("The encoded data is not valid");
      }
      sink.push(0xfffd);
    };
    for (let i = 0; i < bytes.length; i++) {
      const byte = bytes[i]!;
      if (needed === 0 && byte <= 0x7f) {
        // A run of ASCII becomes text in one call, not byte by byte.
        let end = i + 1;
        while (end < bytes.length && bytes[end]! <= 0x7f) end++;
        sink.ascii(bytes, i, end);
        i = end - 1;
        continue;
      }
      if (needed === 0) {
        if (byte >= 0xc2 && byte <= 0xdf) {
          needed = 1;
          point = byte & 0x1f;
        } else if (byte >= 0xe0 && byte <= 0xef) {
          if (byte === 0xe0) lower = 0xa0;
          if (byte === 0xed) upper = 0x9f;
          needed = 2;
          point = byte & 0xf;
        } else if (byte >= 0xf0 && byte <= 0xf4) {
          if (byte === 0xf0) lower = 0x90;
          if (byte === 0xf4) upper = 0x8f;
          needed = 3;
          point = byte & 0x7;
        } else error();
        continue;
      }
      if (byte < lower || byte > upper) {
        needed = seen = point = 0;
        lower = 0x80;
        upper = 0xbf;
        error();
        i--;
        continue;
      }
      lower = 0x80;
      upper = 0xbf;
      point = (point << 6) | (byte & 0x3f);
      if (++seen === needed) {
        sink.push(point);
        needed = seen = point = 0;
      }
    }
    if (options.flush && needed !== 0) {
      needed = seen = point = 0;
      lower = 0x80;
      upper = 0xbf;
      error();
    }
    state.needed = needed;
    state.seen = seen;
    state.point = point;
    state.lower = lower;
    state.upper = upper;
  }

  /**
   * WHATWG's shared UTF-16 decoder over `bytes`, from and into `state`.
   * A lone surrogate, or a byte or lead surrogate left at the end of the
   * stream, is an error (U+FFFD, or a throw when `fatal`); a unit that
   * follows a lead surrogate without being a trail one is read again. A
   * throw leaves the stream as Deno's does: it goes on after the chunk
   * that broke it, and keeps the unit to read again only when the lead
   * surrogate began in an earlier chunk.
   */
  function decodeUtf16(
    bytes: Uint8Array,
    state: Utf16State,
    sink: TextSink,
    options: { fatal: boolean; flush: boolean; bigEndian: boolean },
  ): void {
    let { leadByte, leadSurrogate } = state;
    // Whether the pending byte, and the lead surrogate, began in this chunk.
    let byteHere = false;
    let leadHere = false;
    const error = (unitToKeep = -1) => {
      if (options.fatal) {
        state.leadByte = state.leadSurrogate = -1;
        state.kept = unitToKeep;
        throw new TypeErrorCtor("The encoded data is not valid");
      }
      sink.push(0xfffd);
    };
    const take = (unit: number, here: boolean) => {
      if (leadSurrogate !== -1) {
        const lead = leadSurrogate;
        leadSurrogate = -1;
        if (unit >= 0xdc00 && unit <= 0xdfff) {
          sink.push(0x10000 + ((lead - 0xd800) << 10) + (unit - 0xdc00));
          return;
        }
        error(leadHere ? -1 : unit);
      }
      if (unit >= 0xd800 && unit <= 0xdbff) {
        leadSurrogate = unit;
        leadHere = here;
      } else if (unit >= 0xdc00 && unit <= 0xdfff) error();
      else sink.push(unit);
    };
    if (state.kept !== -1) {
      const kept = state.kept;
      state.kept = -1;
      take(kept, false);
    }
    for (let i = 0; i < bytes.length; i++) {
      const byte = bytes[i]!;
      if (leadByte === -1) {
        leadByte = byte;
        byteHere = true;
        continue;
      }
      const unit = options.bigEndian
        ? (leadByte << 8) | byte
        : (byte << 8) | leadByte;
      leadByte = -1;
      take(unit, byteHere);
    }
    if (options.flush && (leadByte !== -1 || leadSurrogate !== -1)) {
      leadByte = leadSurrogate = -1;
      error();
    }
    state.leadByte = leadByte;
    state.leadSurrogate = leadSurrogate;
  }

  type Encoding = "utf-8" | "utf-16le" | "utf-16be";

  /** A decoder's settings and where its stream stands. */
  interface DecoderState {
    encoding: Encoding;
    fatal: boolean;
    ignoreBOM: boolean;
    doNotFlush: boolean;
    bomSeen: boolean;
    sequence: Utf8State;
    units: Utf16State;
  }
  const decoders = new WeakMapCtor<object, DecoderState>();
  function decoderOf(decoder: object): DecoderState {
    const state = decoders.get(decoder);
    if (state === undefined) throw illegalInvocation();
    return state;
  }

  /** A Web IDL dictionary argument: an object, or nothing. */
  function dictionary(value: unknown, what: string): Record<string, unknown> {
    if (value === undefined || value === null) return {};
    if (typeof value !== "object" && typeof value !== "function") {
      throw new TypeErrorCtor(
        `Failed to ${what}: Argument 2 can not be converted to a dictionary`,
      );
    }
    return value as Record<string, unknown>;
  }

  class TextDecoderClass {
    constructor(label: unknown = "utf-8", options: unknown = undefined) {
      // Web IDL converts both arguments before the label is looked up.
      const text = `${label}`;
      const given = dictionary(options, "construct 'TextDecoder'");
      const fatal = !!given.fatal;
      const ignoreBOM = !!given.ignoreBOM;
      const encoding = encodingOf(text);
      if (encoding === undefined) {
        throw new RangeErrorCtor(
          `Cannot decode "${text}" in this sandbox: TextDecoder knows utf-8, utf-16le and utf-16be only; decode other encodings in a pack`,
        );
      }
      decoders.set(this, {
        encoding,
        fatal,
        ignoreBOM,
        doNotFlush: false,
        bomSeen: false,
        sequence: freshState(),
        units: freshUtf16State(),
      });
    }
    get encoding(): string {
      return decoderOf(this).encoding;
    }
    get fatal(): boolean {
      return decoderOf(this).fatal;
    }
    get ignoreBOM(): boolean {
      return decoderOf(this).ignoreBOM;
    }
    decode(input: unknown = undefined, options: unknown = undefined): string {
      const state = decoderOf(this);
      if (input !== undefined) checkBufferSource(input);
      const stream = !!dictionary(options, "execute 'decode' on 'TextDecoder'")
        .stream;
      const bytes = input === undefined
        ? new Uint8ArrayCtor(0)
        : bytesOf(input);
      if (!state.doNotFlush) {
        state.sequence = freshState();
        state.units = freshUtf16State();
        state.bomSeen = false;
      }
      const sink = new TextSink(!state.ignoreBOM && !state.bomSeen);
      const settings = { fatal: state.fatal, flush: !stream };
      try {
        if (state.encoding === "utf-8") {
          decodeUtf8(bytes, state.sequence, sink, settings);
        } else {
          decodeUtf16(bytes, state.units, sink, {
            ...settings,
            bigEndian: state.encoding === "utf-16be",
          });
        }
      } catch (thrown) {
        // As Deno's: a stream goes on after the chunk that broke it, with
        // that chunk's rest dropped and its start past.
        state.doNotFlush = stream;
        state.sequence = freshState();
        state.bomSeen = true;
        throw thrown;
      }
      state.doNotFlush = stream;
      if (sink.started) state.bomSeen = true;
      return sink.text();
    }
  }

  const ALPHABET =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const SEXTETS = new Uint8ArrayCtor(128).fill(255);
  const ALPHABET_CODES = new Uint8ArrayCtor(64);
  for (let i = 0; i < 64; i++) {
    ALPHABET_CODES[i] = ALPHABET.charCodeAt(i);
    SEXTETS[ALPHABET_CODES[i]!] = i;
  }

  function invalidCharacter(message: string): Error {
    return new DOMExceptionClass(message, "InvalidCharacterError");
  }

  /**
   * The characters of `text` that carry bits under HTML's forgiving-base64
   * decode: ASCII spaces are skipped and up to two `=` of padding are
   * accepted. Throws for a count the decode refuses.
   */
  function base64Sextets(text: string): number {
    let length = 0;
    for (let i = 0; i < text.length; i++) {
      if (!isAsciiSpace(text.charCodeAt(i))) length++;
    }
    let padding = 0;
    if (length % 4 === 0) {
      for (let i = text.length - 1; i >= 0 && padding < 2; i--) {
        const code = text.charCodeAt(i);
        if (isAsciiSpace(code)) continue;
        if (code !== 0x3d) break;
        padding++;
      }
    }
    const usable = length - padding;
    if (usable % 4 === 1) throw invalidCharacter("Failed to decode base64");
    return usable;
  }

  /** The bytes `sextets` characters of base64 decode to, six bits each. */
  function base64ByteCount(sextets: number): number {
    const bits = sextets * 6;
    return (bits - bits % 8) / 8;
  }

  /**
   * Decodes the first `sextets` characters of `text` that carry bits (see
   * `base64Sextets`), handing each byte to `take`.
   */
  function readBase64(
    text: string,
    sextets: number,
    take: (byte: number) => void,
  ): void {
    let buffer = 0;
    let bits = 0;
    for (let i = 0, read = 0; read < sextets; i++) {
      const code = text.charCodeAt(i);
      if (isAsciiSpace(code)) continue;
      read++;
      const sextet = code < 128 ? SEXTETS[code]! : 255;
      if (sextet === 255) throw invalidCharacter("Failed to decode base64");
      buffer = ((buffer << 6) | sextet) & 0xffffff;
      bits += 6;
      if (bits >= 8) {
        bits -= 8;
        take((buffer >> bits) & 0xff);
      }
    }
  }

  /**
   * Base64 with padding of `length` bytes, read with `byteAt`. Built a
   * piece of characters at a time: a string per three bytes held some 40
   * bytes of heap per byte encoded until the join.
   */
  function writeBase64(length: number, byteAt: (at: number) => number): string {
    const parts: string[] = [];
    const units: number[] = [];
    for (let i = 0; i < length; i += 3) {
      const triple = (byteAt(i) << 16) |
        (i + 1 < length ? byteAt(i + 1) << 8 : 0) |
        (i + 2 < length ? byteAt(i + 2) : 0);
      units.push(
        ALPHABET_CODES[triple >> 18]!,
        ALPHABET_CODES[(triple >> 12) & 63]!,
        i + 1 < length ? ALPHABET_CODES[(triple >> 6) & 63]! : 0x3d,
        i + 2 < length ? ALPHABET_CODES[triple & 63]! : 0x3d,
      );
      if (units.length >= 8192) {
        parts.push(apply(fromCharCode, null, units) as string);
        units.length = 0;
      }
    }
    parts.push(apply(fromCharCode, null, units) as string);
    return parts.join("");
  }

  function requireArgument(count: number, name: string): void {
    if (count === 0) {
      throw new TypeErrorCtor(
        `Failed to execute '${name}': 1 argument required, but only 0 present`,
      );
    }
  }

  /** Base64 text to a binary string. */
  function atob(data: unknown): string {
    requireArgument(arguments.length, "atob");
    const text = `${data}`;
    for (let i = 0; i < text.length; i++) {
      // Deno (the worker tier) words a character above U+00FF apart.
      if (text.charCodeAt(i) > 0xff) {
        throw invalidCharacter("Failed to decode base64: invalid character");
      }
    }
    const sink = new TextSink();
    readBase64(text, base64Sextets(text), (byte) => sink.push(byte));
    return sink.text();
  }

  /** Base64 of a binary string; a character above U+00FF is refused. */
  function btoa(data: unknown): string {
    requireArgument(arguments.length, "btoa");
    const text = `${data}`;
    for (let i = 0; i < text.length; i++) {
      if (text.charCodeAt(i) > 0xff) {
        throw invalidCharacter(
          "Cannot encode string: string contains characters outside of the Latin1 range",
        );
      }
    }
    return writeBase64(text.length, (at) => text.charCodeAt(at));
  }

  function encodeBase64(bytes: Uint8Array): string {
    return writeBase64(apply(typedArrayLength, bytes, []), (at) => bytes[at]!);
  }

  // Into bytes sized first: an array of numbers held 8 to 16 bytes of heap
  // per byte decoded, so a 16 MiB body needed a heap of some 400 MiB.
  function decodeBase64(text: string): Uint8Array {
    const base64 = `${text}`;
    const sextets = base64Sextets(base64);
    const bytes = new Uint8ArrayCtor(base64ByteCount(sextets));
    let at = 0;
    readBase64(base64, sextets, (byte) => {
      bytes[at++] = byte;
    });
    return bytes;
  }

  for (
    const [ctor, name] of [
      [DOMExceptionClass, "DOMException"],
      [TextEncoderClass, "TextEncoder"],
      [TextDecoderClass, "TextDecoder"],
    ] as const
  ) {
    defineProperty(ctor, "name", { value: name });
    defineProperty(ctor.prototype, Symbol.toStringTag, {
      value: name,
      configurable: true,
    });
  }
  // A minifier renames function declarations too.
  defineProperty(atob, "name", { value: "atob" });
  defineProperty(btoa, "name", { value: "btoa" });
  return {
    DOMException: DOMExceptionClass as unknown as typeof DOMException,
    TextEncoder: TextEncoderClass as unknown as typeof TextEncoder,
    TextDecoder: TextDecoderClass as unknown as typeof TextDecoder,
    atob,
    btoa,
    encodeBase64,
    decodeBase64,
  };
}
