/**
 * The browser leg on a page whose own scripts change built-ins. Wrappers
 * that only log, installed before the bundle loads, change nothing: the
 * fixture table runs on the loader and the pool as on a clean page. A
 * script that makes `TextDecoder` or `TextEncoder` lie after the bundle
 * loaded cannot change the source a verified module runs: the catalogs
 * check digests with the functions they took when they loaded, and a
 * digest that lies after the bundle loaded cannot make an engine write the
 * hardened image over memory that is not the image's fork point.
 *
 * @module
 */

import assert from "node:assert/strict";
import { test } from "@playwright/test";
import { readFileSync } from "node:fs";
import { CASES, openBundlePage } from "./_fixture_page.ts";

/**
 * Replaces built-ins the catalogs, the loader and the pool use with
 * wrappers that count their calls and answer as the originals do, before
 * any other script of the page runs.
 */
function wrapBuiltinsWithLoggers(): void {
  const calls: Record<string, number> = {};
  (globalThis as { wrappedCalls?: Record<string, number> }).wrappedCalls =
    calls;
  const wrap = (owner: object, key: string, label: string) => {
    // deno-lint-ignore no-explicit-any
    const original = (owner as any)[key];
    calls[label] = 0;
    const wrapper = function (this: unknown, ...args: unknown[]) {
      calls[label]++;
      return new.target
        ? Reflect.construct(original, args, new.target)
        : Reflect.apply(original, this, args);
    };
    Object.defineProperty(wrapper, "name", { value: original.name });
    if (original.prototype !== undefined) {
      wrapper.prototype = original.prototype;
      original.prototype.constructor = wrapper;
    }
    // deno-lint-ignore no-explicit-any
    (owner as any)[key] = wrapper;
  };
  wrap(Array.prototype, "map", "Array.prototype.map");
  wrap(Promise.prototype, "then", "Promise.prototype.then");
  wrap(JSON, "parse", "JSON.parse");
  wrap(globalThis, "fetch", "fetch");
  wrap(Response.prototype, "json", "Response.prototype.json");
  wrap(Response.prototype, "arrayBuffer", "Response.prototype.arrayBuffer");
  wrap(globalThis, "TextDecoder", "TextDecoder");
  wrap(TextDecoder.prototype, "decode", "TextDecoder.prototype.decode");
  wrap(Object, "freeze", "Object.freeze");
  wrap(SubtleCrypto.prototype, "digest", "SubtleCrypto.prototype.digest");
  wrap(globalThis, "Worker", "Worker");
}

test("a page that wrapped built-ins with loggers before the bundle loaded runs the fixture table on the loader and the pool", async ({ page }) => {
  test.setTimeout(120_000);
  await page.addInitScript(wrapBuiltinsWithLoggers);
  const { errors, loadError } = await openBundlePage(page);
  assert.equal(loadError, null);
  const failed = await page.evaluate(async (names) => {
    // deno-lint-ignore no-explicit-any
    const cordon = (globalThis as any).cordon;
    const failures: unknown[] = [];
    for (const entryPoint of ["runFixtureCase", "runFixtureCaseInPool"]) {
      for (const name of names) {
        const report = await cordon[entryPoint](name, location.origin);
        if (!report.pass) failures.push({ entryPoint, ...report });
      }
    }
    return failures;
  }, CASES.map((entry) => entry.name));
  assert.deepEqual(failed, []);
  const calls = await page.evaluate(() =>
    (globalThis as { wrappedCalls?: Record<string, number> }).wrappedCalls
  );
  // The wrappers were in the way: cordon went through them and still held.
  for (const label of ["fetch", "SubtleCrypto.prototype.digest", "Worker"]) {
    assert.ok((calls?.[label] ?? 0) > 0, `${label} was never called`);
  }
  assert.deepEqual(errors, []);
});

/** What the fixture pack's `add(1, 2)` returns once its source is rewritten. */
const REWRITTEN = 666;

test("a TextDecoder that lies after the bundle loaded cannot change the source of a verified module", async ({ page }) => {
  const { errors, loadError } = await openBundlePage(page);
  assert.equal(loadError, null);
  const result = await page.evaluate(async (rewritten) => {
    // deno-lint-ignore no-explicit-any
    const cordon = (globalThis as any).cordon;
    const decode = TextDecoder.prototype.decode;
    TextDecoder.prototype.decode = function (...args) {
      const text = decode.apply(this, args);
      return text.replace("a + b", String(rewritten));
    };
    const loader = await cordon.createQuickJSLoader({
      catalog: cordon.createRemoteCatalog({ baseUrl: location.origin }),
    });
    try {
      return await loader.run({
        source:
          'import { add } from "@cordon-fixtures/math"; export default add(1, 2);',
        packages: ["@cordon-fixtures/math"],
      });
    } finally {
      loader[Symbol.dispose]();
      TextDecoder.prototype.decode = decode;
    }
  }, REWRITTEN);
  assert.deepEqual(
    { ok: result.ok, value: result.value, error: result.error },
    { ok: true, value: 3, error: undefined },
  );
  assert.deepEqual(errors, []);
});

test("a TextEncoder that lies after the bundle loaded cannot pass a rewritten source from the module cache", async ({ page }) => {
  const { errors, loadError } = await openBundlePage(page);
  assert.equal(loadError, null);
  const result = await page.evaluate(async (rewritten) => {
    // deno-lint-ignore no-explicit-any
    const cordon = (globalThis as any).cordon;
    const sources = new Map<string, string>();
    const honest = cordon.createRemoteCatalog({
      baseUrl: location.origin,
      cache: {
        get: (digest: string) => sources.get(digest),
        put: (digest: string, source: string) =>
          void sources.set(digest, source),
      },
    });
    const declaration = {
      source:
        'import { add } from "@cordon-fixtures/math"; export default add(1, 2);',
      packages: ["@cordon-fixtures/math"],
    };
    await honest.prefetch(declaration);
    // The cache now holds rewritten sources; the encoder turns each back
    // into the bytes of the source it replaced.
    const originals = new Map<string, string>();
    for (const [digest, source] of sources) {
      const changed = source.replace("a + b", String(rewritten));
      originals.set(changed, source);
      sources.set(digest, changed);
    }
    const encode = TextEncoder.prototype.encode;
    TextEncoder.prototype.encode = function (text?: string) {
      return encode.call(this, originals.get(text ?? "") ?? text);
    };
    const loader = await cordon.createQuickJSLoader({
      catalog: cordon.createRemoteCatalog({
        baseUrl: location.origin,
        cache: {
          get: (digest: string) => sources.get(digest),
          put: () => {},
        },
      }),
    });
    try {
      return await loader.run(declaration);
    } finally {
      loader[Symbol.dispose]();
      TextEncoder.prototype.encode = encode;
    }
  }, REWRITTEN);
  assert.deepEqual(
    { ok: result.ok, value: result.value, error: result.error },
    { ok: true, value: 3, error: undefined },
  );
  assert.deepEqual(errors, []);
});

/**
 * What an engine hashes to decide whether the shipped image fits its
 * memory (the memory's size, 4 bytes, and the image's ranges at the fork
 * point), as a byte count, and the digest it must give. Read as text: the
 * data file is a module of the repository's, which Node takes for CommonJS.
 */
function shippedImageFork(): { forkBytes: number; forkDigest: string } {
  const text = readFileSync(
    new URL("../loader/_hardened_image_data.js", import.meta.url),
    "utf8",
  );
  const forkDigest = /forkDigest:\s*"([0-9a-f]{64})"/.exec(text)?.[1];
  const ranges = /ranges: (\[\[[0-9, [\]]*\]\]),/.exec(text)?.[1];
  assert.ok(
    forkDigest && ranges,
    "the image data names its fork digest and ranges",
  );
  const pairs: [number, number][] = JSON.parse(ranges);
  const forkBytes = pairs.reduce((sum, [start, end]) => sum + end - start, 4);
  return { forkBytes, forkDigest };
}

test("a digest that lies after the bundle loaded cannot make an engine restore the hardened image over other memory", async ({ page }) => {
  const { errors, loadError } = await openBundlePage(page);
  assert.equal(loadError, null);
  const { forkBytes, forkDigest } = shippedImageFork();
  const outcome = await page.evaluate(async ({ forkBytes, forkDigest }) => {
    // deno-lint-ignore no-explicit-any
    const cordon = (globalThis as any).cordon;
    const digest = SubtleCrypto.prototype.digest;
    const forged = new Uint8Array(
      forkDigest.match(/../g)!.map((pair) => parseInt(pair, 16)),
    );
    let forgedAnswers = 0;
    SubtleCrypto.prototype.digest = function (algorithm, data) {
      if ((data as ArrayBufferView).byteLength !== forkBytes) {
        return digest.call(this, algorithm, data);
      }
      forgedAnswers++;
      return Promise.resolve(forged.slice().buffer);
    };
    try {
      const loader = await cordon.createQuickJSLoader({
        catalog: cordon.createRemoteCatalog({ baseUrl: location.origin }),
      });
      try {
        const { ok, value, error } = await loader.run({
          source:
            'import { greet } from "greet";\nexport default [greet("image"), Object.isFrozen(Object.prototype)];',
          packages: ["greet"],
        });
        return { ok, value, error, forgedAnswers };
      } finally {
        loader[Symbol.dispose]();
      }
    } catch (error) {
      return { thrown: String(error), forgedAnswers };
    } finally {
      SubtleCrypto.prototype.digest = digest;
    }
  }, { forkBytes, forkDigest });
  assert.deepEqual(outcome, {
    ok: true,
    value: ["Hello, image!", true],
    error: undefined,
    forgedAnswers: 0,
  });
  assert.deepEqual(errors, []);
});

test("a WebAssembly.instantiate that throws fails the loader's start with SANDBOX_UNAVAILABLE that names the failure", async ({ page }) => {
  const { errors, loadError } = await openBundlePage(page);
  assert.equal(loadError, null);
  const refusal = await page.evaluate(async () => {
    // deno-lint-ignore no-explicit-any
    const cordon = (globalThis as any).cordon;
    const instantiate = WebAssembly.instantiate;
    WebAssembly.instantiate = () => {
      throw new Error("instantiation refused by a page script");
    };
    try {
      const loader = await cordon.createQuickJSLoader({
        catalog: cordon.createRemoteCatalog({ baseUrl: location.origin }),
      });
      loader[Symbol.dispose]();
      return "started";
    } catch (error) {
      const { name, code, message } = error as Record<string, unknown>;
      return { name, code, message };
    } finally {
      WebAssembly.instantiate = instantiate;
    }
  });
  assert.deepEqual(refusal, {
    name: "CordonError",
    code: "SANDBOX_UNAVAILABLE",
    message:
      "Cannot start the QuickJS engine: its WebAssembly did not start (Error: instantiation refused by a page script); the runtime may lack the memory for a WebAssembly instance, or a script replaced WebAssembly's functions (load cordon before scripts you do not control); try again once memory is free, or remove what replaced them",
  });
  assert.deepEqual(errors, []);
});

test("a btoa that lies after the bundle loaded cannot pass a rewritten module in a browser without Uint8Array.prototype.toBase64", async ({ page }) => {
  // A browser older than Uint8Array.prototype.toBase64, where the catalogs
  // write digests in base64 with btoa.
  await page.addInitScript(() => {
    delete (Uint8Array.prototype as { toBase64?: unknown }).toBase64;
  });
  const { errors, loadError } = await openBundlePage(page);
  assert.equal(loadError, null);
  const result = await page.evaluate(async (rewritten) => {
    // deno-lint-ignore no-explicit-any
    const cordon = (globalThis as any).cordon;
    const fetch = globalThis.fetch;
    const btoa = globalThis.btoa;
    const subtle = crypto.subtle;
    const base64Sha256 = async (bytes: Uint8Array) => {
      const hash = new Uint8Array(await subtle.digest("SHA-256", bytes));
      return btoa(String.fromCharCode(...hash));
    };
    // Each rewritten body's digest, in base64, to the digest of the body it
    // replaced, which the listing and Repr-Digest give.
    const honestOf = new Map<string, string>();
    globalThis.fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (!String(input).includes("digest=")) return response;
      const honest = new Uint8Array(await response.arrayBuffer());
      const text = new TextDecoder().decode(honest);
      const changed = new TextEncoder().encode(
        text.replace("a + b", String(rewritten)),
      );
      honestOf.set(await base64Sha256(changed), await base64Sha256(honest));
      return new Response(changed, {
        status: response.status,
        headers: response.headers,
      });
    };
    globalThis.btoa = (binary: string) => {
      const answer = btoa(binary);
      return honestOf.get(answer) ?? answer;
    };
    try {
      const loader = await cordon.createQuickJSLoader({
        catalog: cordon.createRemoteCatalog({ baseUrl: location.origin }),
      });
      try {
        const { ok, value, error } = await loader.run({
          source:
            'import { add } from "@cordon-fixtures/math"; export default add(1, 2);',
          packages: ["@cordon-fixtures/math"],
        });
        return { ok, value, code: error?.code, rewrittenBodies: honestOf.size };
      } finally {
        loader[Symbol.dispose]();
      }
    } finally {
      globalThis.fetch = fetch;
      globalThis.btoa = btoa;
    }
  }, REWRITTEN);
  const { rewrittenBodies, ...outcome } = result;
  assert.ok(rewrittenBodies > 0, "no module body was rewritten");
  assert.deepEqual(outcome, {
    ok: false,
    value: undefined,
    code: "DIGEST_MISMATCH",
  });
  assert.deepEqual(errors, []);
});
