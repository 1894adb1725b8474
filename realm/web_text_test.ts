import assert from "node:assert/strict";
import { createWebText } from "./web_text.ts";
import { inQuickJS } from "./_differential_test.ts";

const realm = createWebText();

/** A small deterministic generator, so a failure can be replayed. */
function generator(seed: number): (below: number) => number {
  let state = seed >>> 0;
  return (below) => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state % below;
  };
}

// Bytes that start, continue, break and overlong-encode sequences, and the
// boundaries of each lead byte's range.
const EDGE_BYTES = [
  0x00,
  0x41,
  0x7f,
  0x80,
  0x8f,
  0x90,
  0x9f,
  0xa0,
  0xbf,
  0xc0,
  0xc1,
  0xc2,
  0xdf,
  0xe0,
  0xed,
  0xee,
  0xef,
  0xf0,
  0xf4,
  0xf5,
  0xff,
  0xfe,
  0xbb,
  0xef,
];

function randomBytes(next: (below: number) => number, length: number) {
  return Uint8Array.from(
    { length },
    () => next(3) === 0 ? next(256) : EDGE_BYTES[next(EDGE_BYTES.length)]!,
  );
}

const UNITS = [
  0x41,
  0xe9,
  0x7ff,
  0x800,
  0xfeff,
  0xffff,
  0xd800,
  0xdbff,
  0xdc00,
  0xdfff,
  0x20ac,
];

function randomText(next: (below: number) => number, length: number): string {
  return String.fromCharCode(
    ...Array.from(
      { length },
      () => next(4) === 0 ? next(0x10000) : UNITS[next(UNITS.length)]!,
    ),
  );
}

function outcome(fn: () => unknown): unknown {
  try {
    return { value: fn() };
  } catch (error) {
    return { threw: (error as Error).name, message: (error as Error).message };
  }
}

/**
 * Decodes `chunks` one `decode` call each, streaming all but the last, and
 * goes on with the same decoder after a call that throws.
 */
function decodeChunks(
  Decoder: typeof TextDecoder,
  chunks: Uint8Array[],
  options: TextDecoderOptions,
): unknown {
  const decoder = new Decoder("utf-8", options);
  return chunks.map((chunk, i) =>
    outcome(() => decoder.decode(chunk, { stream: i < chunks.length - 1 }))
  );
}

function splitAt(bytes: Uint8Array, next: (below: number) => number) {
  const chunks: Uint8Array[] = [];
  let start = 0;
  while (start < bytes.length) {
    const end = Math.min(bytes.length, start + 1 + next(4));
    chunks.push(bytes.subarray(start, end));
    start = end;
  }
  return chunks.length === 0 ? [bytes] : chunks;
}

Deno.test("TextDecoder decodes like Deno's: replacement, fatal, BOM and streaming over 3,000 random inputs", () => {
  const next = generator(7);
  for (let i = 0; i < 3000; i++) {
    const bytes = randomBytes(next, next(12));
    if (next(5) === 0) bytes.set([0xef, 0xbb, 0xbf].slice(0, bytes.length));
    const options = { fatal: next(2) === 0, ignoreBOM: next(2) === 0 };
    const chunks = next(2) === 0 ? [bytes] : splitAt(bytes, next);
    assert.deepEqual(
      decodeChunks(realm.TextDecoder, chunks, options),
      decodeChunks(TextDecoder, chunks, options),
      `bytes ${Array.from(bytes)} in ${chunks.length} chunks, ${
        JSON.stringify(options)
      }`,
    );
  }
});

Deno.test("a fatal TextDecoder's stream goes on after the chunk that broke it, as Deno's does, with a BOM after it kept", () => {
  const streams = [
    [[0xff], [0xef, 0xbb, 0xbf, 0x42]],
    [[0x41, 0xff], [0xef, 0xbb, 0xbf, 0x42]],
    [[0x41, 0xff, 0x43], [0x44]],
    [[0xe2], [0x41], [0x82, 0xac]],
    [[0xe2, 0x41, 0x42], [0x43]],
    [[0xef, 0xbb], [0xff], [0xbf, 0x43]],
    [[0xef, 0xbb], [0xff], [0xef, 0xbb, 0xbf, 0x43]],
    [[0xef], [0xbb, 0x41], [0xef], [0xbb, 0xbf, 0x43]],
    [[0xf0, 0x9f], [0x41, 0x42], [0x43]],
    [[0x41], [0xff], [0xff], [0x42]],
  ].map((chunks) => chunks.map((chunk) => Uint8Array.from(chunk)));
  for (const chunks of streams) {
    for (const ignoreBOM of [false, true]) {
      assert.deepEqual(
        decodeChunks(realm.TextDecoder, chunks, { fatal: true, ignoreBOM }),
        decodeChunks(TextDecoder, chunks, { fatal: true, ignoreBOM }),
        `${chunks.map((chunk) => `[${chunk}]`)}, ignoreBOM ${ignoreBOM}`,
      );
    }
  }
});

Deno.test("TextEncoder encodes like Deno's, lone surrogates as U+FFFD, and encodeInto stops before a character that does not fit", () => {
  const next = generator(11);
  for (let i = 0; i < 2000; i++) {
    const text = randomText(next, next(10));
    assert.deepEqual(
      new realm.TextEncoder().encode(text),
      new TextEncoder().encode(text),
    );
    const room = next(12);
    const ours = new Uint8Array(room);
    const theirs = new Uint8Array(room);
    assert.deepEqual(
      new realm.TextEncoder().encodeInto(text, ours),
      new TextEncoder().encodeInto(text, theirs),
      `${JSON.stringify(text)} into ${room} bytes`,
    );
    assert.deepEqual(ours, theirs);
  }
  assert.deepEqual(new realm.TextEncoder().encode(), new Uint8Array(0));
  assert.deepEqual(
    new realm.TextEncoder().encode({ toString: () => "é" } as never),
    Uint8Array.of(0xc3, 0xa9),
  );
});

Deno.test("TextDecoder reads every kind of buffer source, and refuses other input and other encodings", () => {
  const bytes = new TextEncoder().encode("xhéllo");
  const decoder = new realm.TextDecoder();
  assert.equal(decoder.decode(bytes.buffer), "xhéllo");
  assert.equal(decoder.decode(bytes.subarray(1)), "héllo");
  assert.equal(decoder.decode(new DataView(bytes.buffer, 1, 2)), "h\ufffd");
  assert.equal(decoder.decode(new Uint16Array(bytes.buffer, 0, 2)), "xhé");
  const shared = new SharedArrayBuffer(2);
  new Uint8Array(shared).set([0x68, 0x69]);
  assert.equal(decoder.decode(shared), "hi");
  assert.equal(decoder.decode(), "");
  assert.throws(() => decoder.decode("text" as never), TypeError);
  assert.throws(() => decoder.decode([104] as never), TypeError);
  for (
    const label of ["utf8", " UTF-8\n", "unicode-1-1-utf-8", "x-unicode20utf8"]
  ) {
    assert.equal(new realm.TextDecoder(label).encoding, "utf-8");
  }
  for (
    const [label, encoding] of [
      ["utf-16", "utf-16le"],
      [" UCS-2", "utf-16le"],
      ["unicodeFEFF", "utf-16le"],
      ["utf-16be", "utf-16be"],
      ["unicodefffe", "utf-16be"],
    ]
  ) {
    assert.equal(new realm.TextDecoder(label).encoding, encoding);
    assert.equal(new TextDecoder(label).encoding, encoding);
  }
  assert.throws(
    () => new realm.TextDecoder("latin1"),
    (error: Error) =>
      error instanceof RangeError &&
      error.message ===
        'Cannot decode "latin1" in this sandbox: TextDecoder knows utf-8, utf-16le and utf-16be only; decode other encodings in a pack',
  );
  assert.throws(() => new realm.TextDecoder("utf-8", 5 as never), TypeError);
  const fatal = new realm.TextDecoder("utf-8", {
    fatal: true,
    ignoreBOM: true,
  });
  assert.deepEqual([fatal.fatal, fatal.ignoreBOM], [true, true]);
});

/** `view` with own properties that shadow its prototype's getters. */
function lying<T extends object>(view: T, props: Record<string, unknown>): T {
  for (const [key, value] of Object.entries(props)) {
    Object.defineProperty(view, key, { value });
  }
  return view;
}

Deno.test("TextDecoder, encodeInto and the base64 helper read a view's own slots, as Deno's do, whatever properties shadow its getters", () => {
  for (const Decoder of [realm.TextDecoder, TextDecoder]) {
    const other = new Uint8Array([0x78, 0x79]).buffer;
    const lies = { buffer: other, byteOffset: 1, byteLength: 1, length: 1 };
    assert.equal(
      new Decoder().decode(lying(new Uint8Array([0x6f, 0x6b]), lies)),
      "ok",
    );
    assert.equal(
      new Decoder().decode(
        lying(new DataView(new Uint8Array([0x6f, 0x6b]).buffer), lies),
      ),
      "ok",
    );
  }
  assert.equal(
    realm.encodeBase64(lying(Uint8Array.of(1, 2), { length: 9 })),
    "AQI=",
  );
  for (const Encoder of [realm.TextEncoder, TextEncoder]) {
    const destination = lying(new Uint8Array(1), { length: 8, byteLength: 8 });
    assert.deepEqual(new Encoder().encodeInto("abc", destination), {
      read: 1,
      written: 1,
    });
  }
});

Deno.test("TextDecoder reads a detached or out-of-bounds source as no bytes, as Deno's does", () => {
  const detach = <T>(make: (buffer: ArrayBuffer) => T): T => {
    const buffer = new ArrayBuffer(8);
    const view = make(buffer);
    buffer.transfer();
    return view;
  };
  const shrunk = new ArrayBuffer(8, { maxByteLength: 16 });
  const outOfBounds = [
    new Uint8Array(shrunk, 4, 4),
    new DataView(shrunk, 4, 4),
  ];
  shrunk.resize(2);
  const sources = [
    detach((buffer) => buffer),
    detach((buffer) => new Uint8Array(buffer)),
    detach((buffer) => new DataView(buffer)),
    ...outOfBounds,
  ];
  for (const source of sources) {
    assert.equal(new realm.TextDecoder().decode(source), "");
    assert.equal(new TextDecoder().decode(source), "");
  }
});

Deno.test("TextDecoder reads its input's bytes after the options' stream getter, as Deno's does, so a getter that resizes or detaches the buffer decides what is decoded", () => {
  /** A decode whose `stream` getter changes the buffer under `input`. */
  const decodeChanged = (
    Decoder: typeof TextDecoder,
    make: (buffer: ArrayBuffer) => AllowSharedBufferSource,
    change: (buffer: ArrayBuffer) => void,
  ): string => {
    const buffer = new ArrayBuffer(4, { maxByteLength: 8 });
    new Uint8Array(buffer).set([0x68, 0x69, 0x6a, 0x6b]);
    const input = make(buffer);
    return new Decoder().decode(input, {
      get stream() {
        change(buffer);
        return false;
      },
    });
  };
  const grow = (buffer: ArrayBuffer) => {
    buffer.resize(6);
    new Uint8Array(buffer).set([0x6c, 0x6d], 4);
  };
  const cases = [
    [(buffer: ArrayBuffer) => new Uint8Array(buffer), grow],
    [(buffer: ArrayBuffer) => buffer, grow],
    [(buffer: ArrayBuffer) => new DataView(buffer), grow],
    [
      (buffer: ArrayBuffer) => new Uint8Array(buffer),
      (b: ArrayBuffer) => b.resize(1),
    ],
    [
      (buffer: ArrayBuffer) => new Uint8Array(buffer, 1),
      (b: ArrayBuffer) => b.resize(3),
    ],
    [
      (buffer: ArrayBuffer) => new Uint8Array(buffer),
      (b: ArrayBuffer) => b.transfer(),
    ],
  ] as const;
  for (const [make, change] of cases) {
    assert.equal(
      decodeChanged(realm.TextDecoder, make, change),
      decodeChanged(TextDecoder, make, change),
      `${make} then ${change}`,
    );
  }
  assert.equal(
    decodeChanged(realm.TextDecoder, (b) => new Uint8Array(b), grow),
    "hijklm",
  );
  // The input is checked before the options are read, as Web IDL converts
  // the arguments in order.
  const read: string[] = [];
  const options = {
    get stream() {
      read.push("stream");
      return false;
    },
  };
  assert.throws(
    () => new realm.TextDecoder().decode("text" as never, options),
    TypeError,
  );
  assert.deepEqual(read, []);
});

Deno.test("TextDecoder converts its arguments as Web IDL does: options before the label is checked, and a dictionary or nothing", () => {
  for (const Decoder of [realm.TextDecoder, TextDecoder]) {
    const getter = {
      get fatal(): boolean {
        throw new SyntaxError("from the getter");
      },
    };
    assert.throws(() => new Decoder("latin2x", getter), SyntaxError);
    for (const options of [5, "stream", true]) {
      assert.throws(
        () => new Decoder().decode(new Uint8Array(1), options as never),
        TypeError,
      );
    }
    assert.equal(new Decoder().decode(Uint8Array.of(0x41), null as never), "A");
    assert.equal(Decoder.prototype.decode.length, 0);
  }
});

Deno.test("methods called on another object throw a TypeError, as Web IDL's brand checks do", () => {
  for (
    const call of [
      () => realm.TextEncoder.prototype.encode.call({}, "x"),
      () => Reflect.get(realm.TextEncoder.prototype, "encoding", {}),
      () => realm.TextDecoder.prototype.decode.call({}),
      () => Reflect.get(realm.TextDecoder.prototype, "fatal", {}),
      () => Reflect.get(realm.DOMException.prototype, "name", {}),
      () =>
        Reflect.construct(realm.TextDecoder, []) &&
        realm.TextDecoder.call({} as never),
    ]
  ) {
    assert.throws(call, TypeError);
  }
});

Deno.test("atob and btoa give Deno's answers and Deno's InvalidCharacterError for 4,000 random inputs", () => {
  const next = generator(3);
  const alphabet = "ABCxyz019+/=  \t\n\f\r-_é\u0100\0";
  const answer = (fn: (text: string) => string, text: string) => {
    try {
      return { value: fn(text) };
    } catch (error) {
      const { name, message, code } = error as DOMException;
      return { name, message, code };
    }
  };
  for (let i = 0; i < 4000; i++) {
    const text = Array.from(
      { length: next(11) },
      () => alphabet[next(alphabet.length)],
    ).join("");
    assert.deepEqual(
      answer(realm.atob, text),
      answer(atob, text),
      `atob(${JSON.stringify(text)})`,
    );
    assert.deepEqual(
      answer(realm.btoa, text),
      answer(btoa, text),
      `btoa(${JSON.stringify(text)})`,
    );
  }
  const binary = String.fromCharCode(
    ...Array.from({ length: 256 }, (_, i) => i),
  );
  assert.equal(realm.btoa(binary), btoa(binary));
  assert.equal(realm.atob(btoa(binary)), binary);
});

Deno.test("DOMException carries a name, a message and the legacy code, and is an Error", () => {
  const error = new realm.DOMException("boom", "AbortError");
  assert.deepEqual([error.name, error.message, error.code], [
    "AbortError",
    "boom",
    20,
  ]);
  assert.ok(error instanceof Error);
  assert.equal(String(error), "AbortError: boom");
  assert.equal(new realm.DOMException().name, "Error");
  assert.equal(new realm.DOMException("x", "Custom").code, 0);
});

Deno.test("DOMException's code is 0 for a name that only Object.prototype knows, and its legacy constants are Deno's", () => {
  for (
    const name of [
      "constructor",
      "toString",
      "valueOf",
      "__proto__",
      "hasOwnProperty",
    ]
  ) {
    assert.equal(new realm.DOMException("m", name).code, 0, name);
  }
  const constants = (target: object) =>
    Object.entries(Object.getOwnPropertyDescriptors(target))
      .filter(([key]) => /^[A-Z_]+_ERR$/.test(key));
  assert.deepEqual(constants(realm.DOMException), constants(DOMException));
  assert.deepEqual(
    constants(realm.DOMException.prototype),
    constants(DOMException.prototype),
  );
  assert.equal(constants(realm.DOMException).length, 25);
});

Deno.test("TextDecoder decodes long ASCII runs around its 8,192-unit chunks as Deno's does, whole and streamed", () => {
  const bytes = new Uint8Array(20_000).map((_, i) => 0x41 + (i % 26));
  for (const at of [8190, 8191, 8192, 16383, 16384]) {
    bytes.set([0xe2, 0x9c, 0x93], at);
  }
  bytes.set([0xef, 0xbb, 0xbf], 0);
  bytes[19_999] = 0xc3;
  for (const split of [1, 4095, 8192, 8193, 19_999]) {
    const chunks = [bytes.subarray(0, split), bytes.subarray(split)];
    for (const ignoreBOM of [false, true]) {
      assert.deepEqual(
        decodeChunks(realm.TextDecoder, chunks, { ignoreBOM }),
        decodeChunks(TextDecoder, chunks, { ignoreBOM }),
        `split at ${split}, ignoreBOM ${ignoreBOM}`,
      );
    }
  }
  assert.equal(
    new realm.TextDecoder().decode(bytes),
    new TextDecoder().decode(bytes),
  );
});

/**
 * What Emscripten's output does when it loads and reads a string back:
 * a `utf-16le` decoder over a view of its memory. Self-contained, for
 * QuickJS.
 */
function emscriptenStrings(Decoder: typeof TextDecoder = TextDecoder): string {
  const decoder = new Decoder("utf-16le");
  const memory = new Uint16Array([0x68, 0xe9, 0xd83d, 0xde00, 0, 0x41]);
  const end = memory.indexOf(0);
  return JSON.stringify([
    decoder.encoding,
    decoder.decode(memory.subarray(0, end)),
    new Decoder("utf-16be").decode(Uint8Array.of(0xfe, 0xff, 0, 0x41, 0xd8)),
  ]);
}

Deno.test("TextDecoder decodes UTF-16 in both byte orders, here and inside QuickJS, as Emscripten's output reads its strings", async () => {
  const expected = emscriptenStrings();
  assert.equal(
    expected,
    JSON.stringify(["utf-16le", "hé\u{1F600}", "A\ufffd"]),
  );
  assert.equal(emscriptenStrings(realm.TextDecoder), expected);
  assert.equal(await inQuickJS(`(${emscriptenStrings})()`), expected);
});
