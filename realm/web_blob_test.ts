import assert from "node:assert/strict";
import {
  differences,
  functionText as text,
  inQuickJS,
  observe,
  webGlobalsVmRealm as vmRealm,
} from "./_differential_test.ts";

type Case = () => unknown;

/**
 * One case per argument list, each a function whose text stands alone
 * (the realms receive cases as source): `template` called with `args`,
 * given as source text.
 */
function each(template: (...args: unknown[]) => unknown, args: string[]) {
  return args.map((list) =>
    (0, eval)(`() => (${text(template)})(${list})`) as Case
  );
}

/** Cases whose error message is the engine's own, not Deno's: class only. */
const ENGINE_WORDED = new Set<Case>();
function engineWorded(make: Case): Case {
  ENGINE_WORDED.add(make);
  return make;
}

const B = Blob as unknown as new (...args: unknown[]) => Blob;
const F = File as unknown as new (...args: unknown[]) => File;

const CASES: Case[] = [
  // Parts of every kind.
  () => new B(),
  () => new B([]),
  () => new B(undefined, undefined),
  () => new B(["", "abc", "h\u00e9llo \u2713 \ud83d\ude00"]),
  () => new B(["\ud800", "a\udc00b", "\ud83d", "\ude00", "\ud83d\ude00\ud800"]),
  () => new B(["\ud83d", "\ude00"]),
  () => new B([new Int8Array([-1, 2, -128])]),
  () => new B([new Uint8Array([0, 255, 128])]),
  () => new B([new Uint8ClampedArray([300, -5, 7])]),
  () => new B([new Int16Array([-2, 258])]),
  () => new B([new Uint16Array([65535, 1])]),
  () => new B([new Int32Array([-1, 16909060])]),
  () => new B([new Uint32Array([4294967295, 7])]),
  () => new B([new Float32Array([1.5, -0, NaN])]),
  () => new B([new Float64Array([Math.PI, -Infinity])]),
  () => new B([new BigInt64Array([-1n, 2n ** 40n])]),
  () => new B([new BigUint64Array([2n ** 64n - 1n])]),
  () => {
    const buffer = new Uint8Array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]).buffer;
    return new B([
      new Uint16Array(buffer, 2, 3),
      new DataView(buffer, 1, 5),
      new Uint8Array(buffer).subarray(7),
      new Int32Array(buffer, 4, 1),
      new DataView(buffer, 10),
      buffer,
      buffer.slice(3, 5),
    ]);
  },
  () => new B([new ArrayBuffer(0), new DataView(new ArrayBuffer(0))]),
  () => {
    const buffer = new ArrayBuffer(3, { maxByteLength: 8 });
    new Uint8Array(buffer).set([1, 2, 3]);
    const tracking = new Uint8Array(buffer, 1);
    return new B([buffer, tracking, new DataView(buffer)]);
  },
  () => {
    const inner = new B(["in", new Uint8Array([1])], { type: "a/b" });
    const file = new F([inner, "f"], "n.txt", { type: "x/y", lastModified: 3 });
    return new B([inner, file, new B([new B([file.slice(1, 3)])]), inner]);
  },
  () =>
    new B([
      1,
      -0,
      NaN,
      1e21,
      {},
      [1, [2, 3]],
      null,
      undefined,
      true,
      10n,
      { toString: () => "custom" },
      new String("boxed"),
      () => 1,
    ]),
  () => {
    class Sub extends Blob {}
    return new B([new Sub(["sub"])]);
  },
  () => new B(new Set(["a", "b"]) as never),
  () => new B(new String("xyz") as never),
  () => new B({ length: 2, 0: "a", 1: "b" } as never),
  () => {
    function* parts() {
      yield "g";
      yield new Uint8Array([65]);
    }
    return new B(parts() as never);
  },
  // Immutable: the bytes are copied when the blob is made.
  () => {
    const source = new Uint8Array([1, 2, 3]);
    const blob = new B([source, source.buffer]);
    source[0] = 9;
    return blob;
  },
  async () => {
    const blob = new B(["abc"]);
    const bytes = await blob.bytes();
    bytes[0] = 0;
    const buffer = await blob.arrayBuffer();
    new Uint8Array(buffer)[1] = 0;
    return [blob, bytes === (await blob.bytes())];
  },
  // Type normalisation.
  ...each((type) => new Blob(["x"], { type: type as string }), [
    '"Text/HTML; Charset=UTF-8"',
    '"\\u00e9"',
    '"a\\u001fb"',
    '"a\\u007f"',
    '" "',
    '"~"',
    '""',
    '"A B~!"',
    '"\\u0130"',
    "5",
    "null",
    '{ toString: () => "A/B" }',
    'Symbol("t")',
  ]),
  // Endings.
  () => new B(["a\r\nb\rc\nd\n\r\r\n\n"], { endings: "native" }),
  () => new B(["a\r\nb\r"], { endings: "transparent" }),
  () => new B(["\r", "\n", "\r\n"], { endings: "native" }),
  () => new B([new Uint8Array([13, 10, 13]), "\r"], { endings: "native" }),
  () => new F(["x\r\ny\r"], "e", { endings: "native", lastModified: 0 }),
  () => new B([], { endings: "NATIVE" }),
  () => new B([], { endings: "" }),
  () => new B([], { endings: null }),
  () => new B([], { endings: Symbol("e") }),
  () => new B([], { endings: { toString: () => "native" } }),
  // Options.
  () => new B(["o"], null),
  () => new B(["o"], Object.assign(() => 1, { type: "F/N" })),
  () => new B(["o"], 5),
  () => new B(["o"], "type"),
  () => new B(["o"], true),
  () => new F(["o"], "n", 5),
  () => {
    const log: string[] = [];
    const options = {
      get type() {
        log.push("type");
        return "T";
      },
      get endings() {
        log.push("endings");
        return "native";
      },
      get lastModified() {
        log.push("lastModified");
        return 1;
      },
    };
    const parts = {
      *[Symbol.iterator]() {
        log.push("iterate");
        yield {
          toString() {
            log.push("part");
            return "p";
          },
        };
      },
    };
    const name = {
      toString() {
        log.push("name");
        return "n";
      },
    };
    new F(parts, name, options);
    new B(parts, options);
    try {
      new B(parts, {
        endings: "bad",
        get type() {
          log.push("unread");
          return "";
        },
      });
    } catch {
      log.push("threw");
    }
    return log;
  },
  // Parts that are not a sequence, or not a part.
  ...each((parts) => new Blob(parts as BlobPart[]), [
    "5",
    "{}",
    "null",
    '"abc"',
    "true",
    "Symbol.iterator",
  ]),
  () => new B({ [Symbol.iterator]: () => undefined }),
  () => new B({ [Symbol.iterator]: () => 5 }),
  () => new B({ [Symbol.iterator]: () => ({ next: () => undefined }) }),
  () => {
    let step = 0;
    const steps = [{ done: "yes", value: "a" }, { done: 1, value: "b" }];
    const next = () => steps[step++] ?? { done: true };
    return new B({ [Symbol.iterator]: () => ({ next }) });
  },
  () => new B([Object.create(Blob.prototype)]),
  () => new B([Object.create(File.prototype)]),
  () => new B(["a", Symbol("s")]),
  () => new B([new SharedArrayBuffer(2)]),
  () => new B([new Uint8Array(new SharedArrayBuffer(2))]),
  () => new B([new DataView(new SharedArrayBuffer(2))]),
  engineWorded(() => {
    const buffer = new ArrayBuffer(2);
    buffer.transfer();
    return new B([buffer]);
  }),
  engineWorded(() => {
    const buffer = new ArrayBuffer(2);
    const view = new Uint8Array(buffer);
    buffer.transfer();
    return new B([view]);
  }),
  engineWorded(() => new B({ [Symbol.iterator]: 5 })),
  engineWorded(() => (Blob as unknown as () => void)()),
  engineWorded(() => (File as unknown as () => void)()),
  // slice(), every case.
  ...each(
    (...args) =>
      new Blob(["hel", new Uint8Array([108, 111]), " wor", new Blob(["ld"])], {
        type: "a/b",
      }).slice(...(args as [])),
    [
      "",
      "0",
      "2",
      "-3",
      "100",
      "-100",
      "3, 1",
      "1, 3",
      "-4, -1",
      "-1, -4",
      "2, 100",
      "NaN",
      "0, NaN",
      "NaN, 5",
      "Infinity",
      "-Infinity",
      "undefined, -Infinity",
      "1e300",
      "1.5",
      "2.5",
      "-1.5",
      "-2.5",
      "0.5, 3.5",
      "-0.4",
      '"2"',
      "null",
      "true",
      "{ valueOf: () => 3 }",
      "undefined, 3",
      '1, 3, "Text/Plain"',
      '0, 5, "\\u00e9"',
      "0, 5, null",
      "0, 5, undefined",
      '0, 5, ""',
      'Symbol("s")',
      "0, 10n",
      '0, 1, Symbol("t")',
    ],
  ),
  () => new B(["hello world"]).slice(2, -2).slice(1, -1, "X/Y").slice(-3),
  () => new F(["file"], "n", { type: "t/t", lastModified: 1 }).slice(1),
  () => new B(["\u00e9\u00e9"]).slice(1, 3),
  // text(), arrayBuffer(), bytes().
  () => new B([new Uint8Array([0xef, 0xbb, 0xbf, 0x61])]).text(),
  () => new B([new Uint8Array([0xff, 0xc3, 0x61, 0xe2, 0x9c])]).text(),
  () => new B(["\ufeff\ufeffx"]).text(),
  () => new B(["abc"]).arrayBuffer(),
  () => new B(["abc"]).bytes(),
  () => new B([]).bytes(),
  async () => {
    const blob = new B(["later"]);
    let settled = false;
    blob.text().then(() => settled = true);
    const now = settled;
    await null;
    const afterOne = settled;
    for (let i = 0; i < 50; i++) await null;
    return [now, afterOne, settled];
  },
  // File.
  () => new F([], "a\ud800b\udc00", { lastModified: 1 }),
  () => new F([], "\ufeffbom", { lastModified: 1 }),
  () => new F([], null, { lastModified: 1 }),
  () => new F([], { toString: () => "obj" }, { lastModified: 1 }),
  () => new F([], 5, { lastModified: 1, type: "IMAGE/PNG" }),
  () => new F([], Symbol("n")),
  ...each(
    (lastModified) =>
      new File(["x"], "t", { lastModified: lastModified as number }),
    [
      "-0",
      "1.9",
      "-1.9",
      '"12"',
      "2 ** 63",
      "2 ** 64 + 2 ** 12",
      "-(2 ** 63) - 4096",
      "2 ** 63 - 1024",
      "NaN",
      "Infinity",
      "-Infinity",
      "null",
      "true",
      "2 ** 53 + 1",
      "1e20",
      "-1e20",
      "{ valueOf: () => 42 }",
      "5n",
      'Symbol("t")',
    ],
  ),
  () => new F(),
  () => new F([]),
  () => new F(undefined, "x"),
  () => {
    const file = new F([], "x", undefined);
    return [file.name, file.size, file.type, typeof file.lastModified];
  },
  () => {
    const file = new F(["a"], "b");
    const before = Date.now();
    const made = new F(["a"], "b").lastModified;
    return [
      typeof file.lastModified,
      made >= before - 1000 && made <= Date.now() + 1000,
    ];
  },
  // Wrong receivers.
  ...each(
    (key) =>
      Object.getOwnPropertyDescriptor(Blob.prototype, key as string)!.get!
        .call({}),
    ['"size"', '"type"'],
  ),
  ...each(
    (key) =>
      Object.getOwnPropertyDescriptor(File.prototype, key as string)!.get!
        .call(new Blob(["x"])),
    ['"name"', '"lastModified"'],
  ),
  () => Blob.prototype.slice.call({}),
  () => Blob.prototype.slice.call(Object.create(Blob.prototype)),
  () => (Blob.prototype as unknown as { size: number }).size,
  () => (File.prototype as unknown as { name: string }).name,
  ...each(
    (key) =>
      (Blob.prototype as unknown as Record<string, () => unknown>)[
        key as string
      ]!.call({}),
    ['"text"', '"arrayBuffer"', '"bytes"'],
  ),
  () => {
    class Sub extends File {}
    const sub = new Sub(["s"], "sub", { lastModified: 2 });
    return [sub, sub instanceof Sub, sub.slice(0, 1)];
  },
  // structuredClone.
  () => {
    const blob = new B(["shared"], { type: "s/s" });
    const file = new F([blob], "f", { type: "f/f", lastModified: 9 });
    const copy = structuredClone({ blob, again: blob, file });
    return [
      copy.blob,
      copy.file,
      copy.blob === copy.again,
      copy.blob !== blob,
      copy.file instanceof File,
    ];
  },
  () => {
    class Sub extends Blob {}
    const sub = new Sub(["s"]) as Blob & { extra?: number };
    sub.extra = 1;
    const copy = structuredClone(sub);
    return [copy, Object.keys(copy), copy instanceof Sub];
  },
  () => structuredClone(Object.create(Blob.prototype)),
  () => structuredClone(Object.create(File.prototype)),
  () => {
    const blob = Object.setPrototypeOf(new B(["q"]), Object.prototype);
    return structuredClone(blob);
  },
];

/** The layout of both classes: members, lengths, accessors, tags. */
function shape(): unknown {
  const describe = (target: object) =>
    Object.getOwnPropertyNames(target)
      .filter((key) => key !== "stream" && key !== "textStream")
      .map((key) => {
        const d = Object.getOwnPropertyDescriptor(target, key)!;
        return [
          key,
          typeof d.value === "function"
            ? `method ${d.value.name} ${d.value.length}`
            : key === "prototype"
            ? "prototype"
            : typeof d.value === "object"
            ? "object"
            : d.value,
          d.get ? `get ${d.get.name} ${d.get.length}` : "",
          d.set ? "set" : "",
          d.enumerable,
          d.configurable,
          d.writable,
        ];
      });
  const tag = (target: object) =>
    Object.getOwnPropertyDescriptor(target, Symbol.toStringTag);
  return {
    blob: describe(Blob),
    file: describe(File),
    blobProto: describe(Blob.prototype),
    fileProto: describe(File.prototype),
    tags: [tag(Blob.prototype), tag(File.prototype)],
    chain: [
      Object.getPrototypeOf(File) === Blob,
      Object.getPrototypeOf(File.prototype) === Blob.prototype,
      Object.getPrototypeOf(Blob.prototype) === Object.prototype,
    ],
    instance: [
      Object.getOwnPropertyNames(new Blob([])),
      Object.getOwnPropertyNames(new File([], "")),
      Object.keys(new File([], "")),
    ],
    global: ["Blob", "File"].map((name) => {
      const d = Object.getOwnPropertyDescriptor(globalThis, name)!;
      return [d.writable, d.enumerable, d.configurable];
    }),
    strings: [
      String(new Blob([])),
      Object.prototype.toString.call(new File([], "")),
      Object.prototype.toString.call(Blob.prototype),
    ],
  };
}

/** A shape without what a realm's lockdown changes (flags, constructor). */
function loosen(layout: Record<string, unknown>): unknown {
  const rows = (list: unknown[][]) =>
    list.filter((row) => row[0] !== "constructor").map((row) =>
      row.slice(0, 5)
    );
  return {
    ...layout,
    blob: rows(layout.blob as unknown[][]),
    file: rows(layout.file as unknown[][]),
    blobProto: rows(layout.blobProto as unknown[][]),
    fileProto: rows(layout.fileProto as unknown[][]),
    tags: (layout.tags as PropertyDescriptor[]).map((tag) => tag.value),
    global: undefined,
  };
}

/** A blob built from a part list the fuzz describes as data. */
type PartSpec =
  | ["text", string]
  | ["view", string, number[], number, number]
  | ["buffer", number[]]
  | ["data", number[], number, number]
  | ["blob", PartSpec[], string, number[]]
  | ["file", PartSpec[], string, string]
  | ["other", number];

/**
 * Builds each spec's parts and options, reads the blob and a slice of it.
 * Self-contained: it runs in Deno, in a `node:vm` context and in QuickJS.
 */
async function fuzzRun(specs: [PartSpec[], string, string, number[]][]) {
  const G = globalThis as unknown as Record<
    string,
    new (buffer: ArrayBuffer, offset: number, length: number) => unknown
  >;
  const build = (parts: PartSpec[]): unknown[] =>
    parts.map((spec) => {
      switch (spec[0]) {
        case "text":
          return spec[1];
        case "view": {
          const [, kind, bytes, offset, length] = spec;
          const Ctor = G[kind]!;
          return new Ctor(new Uint8Array(bytes).buffer, offset, length);
        }
        case "buffer":
          return new Uint8Array(spec[1]).buffer;
        case "data":
          return new DataView(new Uint8Array(spec[1]).buffer, spec[2], spec[3]);
        case "blob":
          return new Blob(build(spec[1]) as BlobPart[], { type: spec[2] })
            .slice(...(spec[3] as []));
        case "file":
          return new File(build(spec[1]) as BlobPart[], spec[3], {
            type: spec[2],
            lastModified: 5,
          });
        default:
          return spec[1];
      }
    });
  const results = [];
  for (const [parts, type, endings, slice] of specs) {
    try {
      const blob = new Blob(build(parts) as BlobPart[], {
        type,
        endings: endings as EndingType,
      });
      const cut = blob.slice(...(slice as []));
      results.push([
        blob.size,
        blob.type,
        Array.from(await blob.bytes()),
        cut.size,
        cut.type,
        await cut.text(),
      ]);
    } catch (error) {
      results.push(["threw", (error as Error).name, (error as Error).message]);
    }
  }
  return results;
}

/** A small deterministic generator, so a failure can be replayed. */
function generator(seed: number): (below: number) => number {
  let state = seed >>> 0;
  return (below) => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state % below;
  };
}

const FUZZ_TEXT = [
  "a",
  "\u00e9",
  "\u2713",
  "\ud83d\ude00",
  "\ud800",
  "\r",
  "\n",
  "\r\n",
  " ",
  "Z",
];
const VIEW_KINDS: [string, number][] = [
  ["Uint8Array", 1],
  ["Int8Array", 1],
  ["Uint8ClampedArray", 1],
  ["Int16Array", 2],
  ["Uint16Array", 2],
  ["Int32Array", 4],
  ["Float32Array", 4],
  ["Float64Array", 8],
  ["BigUint64Array", 8],
];
const FUZZ_TYPES = ["", "text/plain", "A/B", "x\u00e9", " ~", "T\u007f"];

function randomSpecs(count: number, seed: number) {
  const next = generator(seed);
  const bytes = (length: number) => Array.from({ length }, () => next(256));
  const part = (depth: number): PartSpec => {
    switch (next(depth > 1 ? 5 : 7)) {
      case 0: {
        let text = "";
        for (let i = next(6); i > 0; i--) {
          text += FUZZ_TEXT[next(FUZZ_TEXT.length)];
        }
        return ["text", text];
      }
      case 1: {
        const [kind, size] = VIEW_KINDS[next(VIEW_KINDS.length)]!;
        const length = next(4);
        const offset = next(3) * size;
        return [
          "view",
          kind,
          bytes(offset + length * size + next(3)),
          offset,
          length,
        ];
      }
      case 2:
        return ["buffer", bytes(next(6))];
      case 3: {
        const offset = next(3);
        const length = next(4);
        return ["data", bytes(offset + length + next(2)), offset, length];
      }
      case 4:
        return ["other", next(1000) - 500];
      case 5:
        return [
          "blob",
          parts(depth + 1),
          FUZZ_TYPES[next(FUZZ_TYPES.length)]!,
          [next(12) - 6, next(12) - 3].slice(0, next(3)),
        ];
      default:
        return [
          "file",
          parts(depth + 1),
          FUZZ_TYPES[next(FUZZ_TYPES.length)]!,
          "f" + next(9),
        ];
    }
  };
  const parts = (depth: number) =>
    Array.from({ length: next(5) }, () => part(depth));
  return Array.from({ length: count }, () =>
    [
      parts(0),
      FUZZ_TYPES[next(FUZZ_TYPES.length)]!,
      ["transparent", "native"][next(2)]!,
      [next(30) - 10, next(30) - 10].slice(0, next(3)),
    ] as [PartSpec[], string, string, number[]]);
}

/** The program each realm runs: every case observed, as JSON. */
function program(cases: Case[]): string {
  return `(async () => {
  const observe = (${text(observe)});
  const B = Blob, F = File;
  const cases = [${cases.map(text).join(",\n")}];
  const results = [];
  for (const make of cases) results.push(await observe(make));
  return JSON.stringify([results, (${text(shape)})()]);
})()`;
}

function fuzzProgram(specs: unknown): string {
  return `(async () => JSON.stringify(await (${text(fuzzRun)})(${
    JSON.stringify(specs)
  })))()`;
}

async function denoAnswer(cases: Case[]): Promise<[unknown[], unknown]> {
  const results = [];
  for (const make of cases) results.push(await observe(make));
  return JSON.parse(JSON.stringify([results, shape()]));
}

Deno.test("Blob and File in a node:vm context answer as Deno's for every case: parts, types, endings, slices, reads, File fields, errors and clones", async () => {
  const [mine] = JSON.parse(await vmRealm().run(program(CASES)) as string);
  const [theirs] = await denoAnswer(CASES);
  assert.ok(CASES.length >= 170, `${CASES.length} cases`);
  assert.deepEqual(differences(CASES, mine, theirs, ENGINE_WORDED), []);
});

Deno.test("Blob and File inside QuickJS answer as Deno's for every case, engine-worded conversion errors compared by class", async () => {
  const [mine] = JSON.parse(await inQuickJS(program(CASES)));
  const [theirs] = await denoAnswer(CASES);
  assert.deepEqual(differences(CASES, mine, theirs, ENGINE_WORDED), []);
});

Deno.test("Blob and File are laid out as Deno's are: members, lengths, accessors, tags, the File chain and the globals' flags", async () => {
  const [, deno] = await denoAnswer([]);
  const [, inVm] = JSON.parse(await vmRealm().run(program([])) as string);
  const [, inQuick] = JSON.parse(await inQuickJS(program([])));
  assert.deepEqual(inVm, deno);
  // QuickJS's lockdown freezes the members and turns each prototype's
  // constructor into an accessor: the rest must match.
  assert.deepEqual(loosen(inQuick), loosen(deno as Record<string, unknown>));
});

Deno.test("Blob answers as Deno's for 600 seeded random part lists, in node:vm, and 150 of them in QuickJS", async () => {
  const specs = randomSpecs(600, 20260602);
  const expected = JSON.parse(JSON.stringify(await fuzzRun(specs)));
  const inVm = JSON.parse(await vmRealm().run(fuzzProgram(specs)) as string);
  const label = specs.map((spec) => JSON.stringify(spec)) as unknown as Case[];
  const compare = (mine: unknown[], theirs: unknown[]) => {
    const found = [];
    for (let i = 0; i < mine.length; i++) {
      try {
        assert.deepEqual(mine[i], theirs[i]);
      } catch {
        found.push({ case: label[i], realm: mine[i], deno: theirs[i] });
      }
    }
    return found;
  };
  const made = expected.filter((row: unknown[]) => row[0] !== "threw");
  assert.ok(made.length > 550, `${made.length} of 600 made a blob`);
  assert.ok(made.filter((row: number[]) => row[0]! > 8).length > 200);
  assert.deepEqual(compare(inVm, expected), []);
  const subset = specs.slice(0, 150);
  const inQuick = JSON.parse(await inQuickJS(fuzzProgram(subset)));
  assert.deepEqual(compare(inQuick, expected.slice(0, 150)), []);
});
