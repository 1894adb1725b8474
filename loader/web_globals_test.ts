import assert from "node:assert/strict";
import { createQuickJSLoader } from "./quickjs_loader.ts";
import { createQuickJSPool } from "./quickjs_pool.ts";
import { createTestCatalog } from "./_test_catalog_test.ts";
import { EMPTY_CATALOG } from "../catalog/empty_catalog.ts";
import type { SandboxResult } from "../protocol/mod.ts";

// Bytes that start, continue, break and overlong-encode UTF-8 sequences.
const EDGE_BYTES = [
  0x41,
  0x7f,
  0x80,
  0x9f,
  0xa0,
  0xbf,
  0xc0,
  0xc2,
  0xdf,
  0xe0,
  0xed,
  0xef,
  0xf0,
  0xf4,
  0xf5,
  0xff,
];
const UNITS = [0x41, 0xe9, 0x800, 0xfeff, 0xd800, 0xdbff, 0xdc00, 0xdfff];

/** Every sequence of `length` items of `items`. */
function sequences<T>(items: readonly T[], length: number): T[][] {
  if (length === 0) return [[]];
  return sequences(items, length - 1).flatMap((head) =>
    items.map((item) => [...head, item])
  );
}

function valueOf(result: SandboxResult): unknown {
  assert.ok(result.ok, JSON.stringify(result).slice(0, 500));
  return result.value;
}

function attempt(fn: () => unknown): unknown {
  try {
    return fn();
  } catch (error) {
    return "threw " + (error as Error).name;
  }
}

/** What the guest below computes, computed by Deno's own Web APIs. */
function expected(
  bytes: number[][],
  texts: string[],
  base64: string[],
): unknown {
  return {
    decoded: bytes.map((input) => [
      new TextDecoder().decode(new Uint8Array(input)),
      attempt(() =>
        new TextDecoder("utf-8", { fatal: true }).decode(new Uint8Array(input))
      ),
    ]),
    encoded: texts.map((text) => Array.from(new TextEncoder().encode(text))),
    base64: base64.map((
      text,
    ) => [attempt(() => atob(text)), attempt(() => btoa(text))]),
  };
}

const GUEST = `export default ({ bytes, texts, base64 }) => {
  const attempt = (fn) => { try { return fn(); } catch (e) { return "threw " + e.name; } };
  return {
    decoded: bytes.map((input) => [
      new TextDecoder().decode(new Uint8Array(input)),
      attempt(() => new TextDecoder("utf-8", { fatal: true }).decode(new Uint8Array(input))),
    ]),
    encoded: texts.map((text) => Array.from(new TextEncoder().encode(text))),
    base64: base64.map((text) => [attempt(() => atob(text)), attempt(() => btoa(text))]),
  };
};`;

Deno.test("inside QuickJS, TextDecoder, TextEncoder, atob and btoa answer as Deno's do for every short edge input", async () => {
  using loader = await createQuickJSLoader({ catalog: EMPTY_CATALOG });
  const bytes = [1, 2, 3].flatMap((length) => sequences(EDGE_BYTES, length));
  const texts = sequences(UNITS, 2).map((units) =>
    String.fromCharCode(...units)
  );
  const base64 = [1, 2, 3, 4].flatMap((length) =>
    sequences([..."A0+/= \n#"], length).map((chars) => chars.join(""))
  );
  const result = await loader.run(
    { source: GUEST },
    { context: { bytes, texts, base64 }, timeoutMs: 60_000 },
  );
  assert.deepEqual(valueOf(result), expected(bytes, texts, base64));
});

Deno.test("inside QuickJS, a megabyte decodes and encodes within one run's limits", async () => {
  using loader = await createQuickJSLoader({ catalog: EMPTY_CATALOG });
  const result = await loader.run({
    source: `const big = new Uint8Array(1 << 20).fill(0x61);
big.set([0xe2, 0x9c, 0x93], 1000);
const text = new TextDecoder().decode(big);
export default [text.length, new TextEncoder().encode(text).length, btoa(text.slice(0, 999)).length];`,
  }, { timeoutMs: 20_000 });
  assert.deepEqual(valueOf(result), [(1 << 20) - 2, 1 << 20, 1332]);
});

const PACKS = [{
  name: "@t/ids",
  exports: { ".": "./index.js" },
  files: {
    "./index.js": `export const atLoad = crypto.randomUUID();
export const fresh = () => Array.from(crypto.getRandomValues(new Uint8Array(8)));`,
  },
}];

Deno.test("every QuickJS run draws new random values, from a warm pack graph and on the pool's threads too", async () => {
  const catalog = createTestCatalog(PACKS);
  const declaration = {
    source: `import { atLoad, fresh } from "@t/ids";
export default [atLoad, fresh(), crypto.randomUUID()];`,
    packages: ["@t/ids"],
  };
  using loader = await createQuickJSLoader({ catalog });
  await using pool = await createQuickJSPool({ catalog, size: 2 });
  for (const runner of [loader, pool]) {
    const values = [];
    for (let i = 0; i < 12; i++) {
      const result = await runner.run(declaration);
      values.push(valueOf(result) as [string, number[], string]);
    }
    // A pack's top level runs once per warm copy; what a run draws is its own.
    assert.ok(new Set(values.map(([atLoad]) => atLoad)).size <= 2);
    assert.equal(new Set(values.map(([, fresh]) => `${fresh}`)).size, 12);
    assert.equal(new Set(values.map(([, , uuid]) => uuid)).size, 12);
  }
});

Deno.test("the web globals are frozen and locked like every other global, and a run cannot change them for the next", async () => {
  using loader = await createQuickJSLoader({ catalog: EMPTY_CATALOG });
  const first = await loader.run({
    source: `const tries = [
  () => { TextEncoder.prototype.encode = () => "forged"; },
  () => { crypto.getRandomValues = (a) => a; },
  () => { globalThis.atob = () => "forged"; },
  () => Object.defineProperty(globalThis, "crypto", { value: {} }),
  () => { Object.getPrototypeOf(new TextDecoder()).decode = () => "forged"; },
];
export default tries.map((fn) => { try { fn(); return "changed"; } catch (e) { return e.name; } });`,
  });
  assert.deepEqual(valueOf(first), new Array(5).fill("TypeError"));
  const next = await loader.run({
    source: `export default [
  Object.isFrozen(TextDecoder.prototype), Object.isFrozen(crypto),
  new TextDecoder().decode(new TextEncoder().encode("ok")), atob("b2s="),
  crypto.getRandomValues(new Uint8Array(32)).some((b) => b !== 0),
];`,
  });
  assert.deepEqual(valueOf(next), [true, true, "ok", "ok", true]);
});

Deno.test("URL and URLSearchParams are frozen and locked like every other global, and a run cannot change them for the next", async () => {
  using loader = await createQuickJSLoader({ catalog: EMPTY_CATALOG });
  const first = await loader.run({
    source: `const tries = [
  () => { URL.prototype.toString = () => "forged"; },
  () => { Object.defineProperty(URL.prototype, "href", { get: () => "forged" }); },
  () => { URLSearchParams.prototype.get = () => "forged"; },
  () => { Object.getPrototypeOf(new URLSearchParams().keys()).next = () => ({ done: true }); },
  () => { globalThis.URL = function () {}; },
  () => Object.defineProperty(globalThis, "URLSearchParams", { value: {} }),
  () => { URL.canParse = () => true; },
  () => { delete URL.prototype.searchParams; if ("searchParams" in URL.prototype) throw new TypeError("kept"); },
];
const url = new URL("http://a/?q=1");
url.searchParams.append("r", "2");
url.extra = "own property";
export default [tries.map((fn) => { try { fn(); return "changed"; } catch (e) { return e.name; } }), url.href];`,
  });
  assert.deepEqual(valueOf(first), [
    new Array(8).fill("TypeError"),
    "http://a/?q=1&r=2",
  ]);
  const next = await loader.run({
    source: `const url = new URL("https://example.com/p?a=1#f");
export default [
  Object.isFrozen(URL), Object.isFrozen(URL.prototype), Object.isFrozen(URLSearchParams.prototype),
  url.toString(), url.searchParams.get("a"), URL.canParse("nope"), [...url.searchParams.keys()],
  new URLSearchParams("x=1").toString(), typeof URL.prototype.extra,
];`,
  });
  assert.deepEqual(valueOf(next), [
    true,
    true,
    true,
    "https://example.com/p?a=1#f",
    "1",
    false,
    ["a"],
    "x=1",
    "undefined",
  ]);
});

Deno.test("structuredClone is frozen and locked like every other global, and a run cannot change it for the next", async () => {
  using loader = await createQuickJSLoader({ catalog: EMPTY_CATALOG });
  const first = await loader.run({
    source: `const tries = [
  () => { globalThis.structuredClone = (value) => "forged"; },
  () => { structuredClone.call = () => "forged"; },
  () => Object.defineProperty(globalThis, "structuredClone", { value: () => "forged" }),
  () => { Map.prototype.forEach = () => {}; },
  () => { Object.getPrototypeOf(new Map().keys()).next = () => ({ done: true }); },
];
export default tries.map((fn) => { try { fn(); return "changed"; } catch (e) { return e.name; } });`,
  });
  assert.deepEqual(valueOf(first), new Array(5).fill("TypeError"));
  const next = await loader.run({
    source: `const copy = structuredClone({ map: new Map([[1, [2]]]) });
export default [Object.isFrozen(structuredClone), copy.map.get(1)[0], structuredClone("x")];`,
  });
  assert.deepEqual(valueOf(next), [true, 2, "x"]);
});

Deno.test("Blob and File are frozen and locked like every other global, and a run cannot change them for the next", async () => {
  using loader = await createQuickJSLoader({ catalog: EMPTY_CATALOG });
  const first = await loader.run({
    source: `const blob = new Blob(["kept"], { type: "a/b" });
const tries = [
  () => { Blob.prototype.text = async () => "forged"; },
  () => { Object.defineProperty(Blob.prototype, "size", { get: () => 99 }); },
  () => { File.prototype.constructor = function () {}; if (File.prototype.constructor !== File) throw new TypeError("kept"); },
  () => { delete Blob.prototype.slice; if ("slice" in Blob.prototype) throw new TypeError("kept"); },
  () => { globalThis.Blob = function () {}; },
  () => Object.defineProperty(globalThis, "File", { value: {} }),
  () => { Object.setPrototypeOf(File.prototype, null); },
  () => { blob.constructor.prototype.toString = () => "forged"; },
];
blob.extra = "own property";
export default [tries.map((fn) => { try { fn(); return "changed"; } catch (e) { return e.name; } }), await blob.text(), blob.size];`,
  });
  assert.deepEqual(valueOf(first), [new Array(8).fill("TypeError"), "kept", 4]);
  const next = await loader.run({
    source:
      `const file = new File(["h\\u00e9", new Uint8Array([33])], "n.txt", { type: "Text/Plain", lastModified: 1 });
export default [
  Object.isFrozen(Blob), Object.isFrozen(Blob.prototype), Object.isFrozen(File.prototype),
  Object.getPrototypeOf(File.prototype) === Blob.prototype, await file.text(), file.size, file.type,
  await file.slice(1, 3).text(), Object.hasOwn(Blob.prototype, "toString"), Object.prototype.toString.call(file),
];`,
  });
  assert.deepEqual(valueOf(next), [
    true,
    true,
    true,
    true,
    "h\u00e9!",
    4,
    "text/plain",
    "\u00e9",
    false,
    "[object File]",
  ]);
});

Deno.test("the language built-ins a QuickJS realm is given are frozen and locked like every other, and a run cannot change them for the next", async () => {
  using loader = await createQuickJSLoader({ catalog: EMPTY_CATALOG });
  const first = await loader.run({
    source: `const tries = [
  () => { Uint8Array.prototype.toBase64 = () => "forged"; },
  () => { Uint8Array.fromHex = () => "forged"; },
  () => { Array.fromAsync = () => "forged"; },
  () => { Error.captureStackTrace = () => {}; },
  () => { Symbol.dispose = Symbol("forged"); },
  () => Object.defineProperty(Symbol, "asyncDispose", { value: Symbol("forged") }),
  () => { DisposableStack.prototype.dispose = () => {}; },
  () => { globalThis.SuppressedError = function () {}; },
  () => { Object.getPrototypeOf(Object.getPrototypeOf([].values()))[Symbol.dispose] = () => {}; },
];
export default tries.map((fn) => { try { fn(); return "changed"; } catch (e) { return e.name; } });`,
  });
  assert.deepEqual(valueOf(first), new Array(9).fill("TypeError"));
  const next = await loader.run({
    source: `const order = [];
const stack = new DisposableStack();
stack.defer(() => order.push("deferred"));
stack.dispose();
const target = {};
Error.captureStackTrace(target);
export default [Uint8Array.of(1, 2).toBase64(), Array.from(Uint8Array.fromHex("0aff")), order,
  typeof target.stack, typeof Symbol.dispose, Object.isFrozen(Symbol), Object.isFrozen(DisposableStack.prototype),
  await Array.fromAsync([Promise.resolve("a")])];`,
  });
  assert.deepEqual(valueOf(next), [
    "AQI=",
    [10, 255],
    ["deferred"],
    "string",
    "symbol",
    true,
    true,
    ["a"],
  ]);
});

// Each call's input is made inside the guest, and its limit is about twice
// what it needs: an array of numbers per byte or per character, or a
// string per byte or per chunk, once needed 7.5 to 42 MiB for these.
const WITHIN_LIMIT: readonly [string, string, number, number, number][] = [
  [
    "Uint8Array.fromBase64",
    `Uint8Array.fromBase64("QUFB".repeat(1 << 18)).length`,
    1,
    4,
    3 << 18,
  ],
  [
    "setFromBase64",
    `new Uint8Array(3 << 18).setFromBase64("QUFB".repeat(1 << 18)).written`,
    1,
    4,
    3 << 18,
  ],
  [
    "Uint8Array.fromHex",
    `Uint8Array.fromHex("61".repeat(1 << 19)).length`,
    1,
    4,
    1 << 19,
  ],
  [
    "setFromHex",
    `new Uint8Array(1 << 19).setFromHex("61".repeat(1 << 19)).written`,
    1,
    4,
    1 << 19,
  ],
  [
    "toBase64",
    `new Uint8Array(1 << 20).toBase64().length`,
    1,
    8,
    4 * Math.ceil((1 << 20) / 3),
  ],
  ["toHex", `new Uint8Array(1 << 20).toHex().length`, 1, 12, 2 << 20],
  [
    "URL",
    `new URL("http://a/?" + "a".repeat(2 << 20)).href.length`,
    2,
    24,
    (2 << 20) + 10,
  ],
  [
    "URLSearchParams",
    `new URLSearchParams("a=" + "%61".repeat(1 << 18)).get("a").length`,
    1,
    12,
    1 << 18,
  ],
];

for (const [api, expression, inputMiB, limitMiB, answer] of WITHIN_LIMIT) {
  Deno.test(`inside QuickJS, ${api} takes ${inputMiB} MiB within a ${limitMiB} MiB memory limit`, async () => {
    using loader = await createQuickJSLoader({ catalog: EMPTY_CATALOG });
    const result = await loader.run(`export default ${expression};`, {
      memoryLimitBytes: limitMiB << 20,
      timeoutMs: 60_000,
    });
    assert.equal(valueOf(result), answer);
  });
}
