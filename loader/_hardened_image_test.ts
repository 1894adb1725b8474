import assert from "node:assert/strict";
import { runScript } from "../tools/_script_run_test.ts";
import type { QuickJSSyncVariant } from "quickjs-emscripten-core";
import singlefileVariant from "@jitl/quickjs-singlefile-browser-release-sync";
import wasmfileVariant from "@jitl/quickjs-wasmfile-release-sync";
import { createEngine, type Engine, type Snapshot } from "./_engine.ts";
import {
  digestFork,
  type HardenedImage,
  hardenedImageFor,
} from "./_hardened_image.ts";

const variant = singlefileVariant as unknown as QuickJSSyncVariant;

/** The addresses of the 32-bit words where two snapshots differ. */
function differingWords(a: Snapshot, b: Snapshot): number[] {
  assert.deepEqual(a.ranges, b.ranges);
  const addresses: number[] = [];
  a.ranges.forEach(({ start }, r) => {
    const left = new Uint32Array(a.bytes[r]!.slice().buffer);
    const right = new Uint32Array(b.bytes[r]!.slice().buffer);
    for (let i = 0; i < left.length; i++) {
      if (left[i] !== right[i]) addresses.push(start + i * 4);
    }
  });
  return addresses;
}

async function shippedImage(): Promise<HardenedImage> {
  const image = await hardenedImageFor(variant);
  assert.ok(image !== null, "the shipped image decodes");
  return image;
}

/** Runs a module in an engine between restores, as a run does. */
function evaluate(engine: Engine, source: string): unknown {
  engine.restore();
  // Between runs an engine's hooks interrupt any code at QuickJS's next
  // check; a probe is not a run, so it runs whole.
  const idle = engine.hooks;
  engine.hooks = { ...idle, interrupt: () => false };
  const { context } = engine;
  const result = context.evalCode(source, "probe.js");
  try {
    if ("error" in result && result.error !== undefined) {
      return { error: context.dump(result.error) };
    }
    return context.dump(result.value);
  } finally {
    result.dispose();
    engine.hooks = idle;
    engine.restore();
  }
}

Deno.test("an engine of the default build restores the shipped hardened image", async () => {
  const engine = await createEngine(variant);
  assert.equal(engine.restored, true);
});

Deno.test("a restored engine's memory is a freshly hardened one's, byte for byte, but for the clock-seeded words the image names", async () => {
  const image = await shippedImage();
  assert.ok(image.volatileWords.length <= 2, `${image.volatileWords}`);
  const fresh = await createEngine(variant, undefined, { image: null });
  const restored = await createEngine(variant, undefined, { image });
  assert.equal(fresh.restored, false);
  assert.equal(restored.restored, true);
  assert.deepEqual(restored.ranges, fresh.ranges);
  const differing = differingWords(fresh.base, restored.base);
  for (const address of differing) {
    assert.ok(image.volatileWords.includes(address), `word at ${address}`);
  }
});

Deno.test("the image's fork digest ignores the whole clock seed, so it matches a fork point hours later", async () => {
  const image = await shippedImage();
  assert.equal(image.volatileWords.length, 2, `${image.volatileWords}`);
  const [low, high] = image.volatileWords as [number, number];
  assert.equal(low % 8, 0);
  assert.equal(high, low + 4);
  let fork: Uint8Array | null = null;
  await createEngine(variant, undefined, {
    image: null,
    record: (made) => (fork = made.fork),
  });
  assert.ok(fork !== null);
  const later = (fork as Uint8Array).slice();
  // The high word of the microsecond clock, some hours on.
  new DataView(later.buffer).setUint32(high, 0xdeadbeef, true);
  const digest = (memory: Uint8Array) =>
    digestFork(
      memory.length,
      image.ranges,
      image.ranges.map(({ start, end }) => memory.slice(start, end)),
      image.volatileWords,
    );
  assert.equal(await digest(later), image.forkDigest);
  assert.equal(await digest(fork as Uint8Array), image.forkDigest);
});

Deno.test("a restored engine is hardened: frozen intrinsics, locked globals, no eval, no timers, a console, reseeded randomness", async () => {
  const engine = await createEngine(variant, undefined, {
    image: await shippedImage(),
  });
  assert.equal(engine.restored, true);
  const lines: string[] = [];
  // Not a run: the probes and reseeds below run whole.
  engine.hooks = {
    ...engine.hooks,
    interrupt: () => false,
    log: (_level, text) => {
      lines.push(text);
      return true;
    },
  };
  assert.deepEqual(
    evaluate(
      engine,
      `[Object.isFrozen(Array.prototype),
        Reflect.ownKeys(globalThis).every((key) => {
          const { configurable, writable } = Object.getOwnPropertyDescriptor(globalThis, key);
          return !configurable && writable !== true;
        }),
        typeof setTimeout, (() => { try { eval("1"); return "ran"; } catch (e) { return e.name; } })()]`,
    ),
    [true, true, "undefined", "EvalError"],
  );
  evaluate(engine, `console.log("from", "guest")`);
  assert.deepEqual(lines, ["from guest"]);
  const draw = () => {
    engine.restore();
    // Four words seed Math.random, eight more key crypto.
    const seeds = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12].map((n) =>
      engine.context.newNumber(n)
    );
    engine.context.unwrapResult(
      engine.context.callFunction(
        engine.reseedFn,
        engine.context.undefined,
        seeds,
      ),
    ).dispose();
    for (const seed of seeds) seed.dispose();
    const result = engine.context.unwrapResult(
      engine.context.evalCode("Math.random()"),
    );
    const value = engine.context.getNumber(result);
    result.dispose();
    return value;
  };
  assert.equal(draw(), draw());
});

Deno.test("an engine hardens its context itself when the image does not fit where it is", async () => {
  const image = await shippedImage();
  const [data, heap] = image.ranges;
  const misfits: HardenedImage[] = [
    { ...image, forkDigest: "0000000000000000" },
    { ...image, memoryBytes: image.memoryBytes + 65536 },
    { ...image, ranges: [data!, { start: heap!.start + 16, end: heap!.end }] },
  ];
  for (const misfit of misfits) {
    const engine = await createEngine(variant, undefined, { image: misfit });
    assert.equal(engine.restored, false);
    assert.deepEqual(
      evaluate(engine, "Object.isFrozen(Array.prototype)"),
      true,
    );
  }
});

Deno.test("an engine of another build hardens its context itself", async () => {
  const wasmfile = wasmfileVariant as unknown as QuickJSSyncVariant;
  assert.equal(await hardenedImageFor(wasmfile), null);
  const engine = await createEngine(wasmfile);
  assert.equal(engine.restored, false);
  assert.deepEqual(evaluate(engine, "Object.isFrozen(Array.prototype)"), true);
});

Deno.test("an engine's creation fails with what decoding the shipped image threw, where it was dropped and the engine hardened its context itself", async () => {
  // The decoder reads the image's bytes with the Uint8Array.fromBase64 it
  // captured when it was imported: one that throws stands for a fault of
  // the decoding. In a process of its own, whose image is decoded once.
  const engineUrl = new URL("./_engine.ts", import.meta.url).href;
  const outcome = await runScript(
    `
    Object.defineProperty(Uint8Array, "fromBase64", {
      configurable: true,
      value() {
        throw new TypeError("the planted decoding fault");
      },
    });
    const { createEngine } = await import(${JSON.stringify(engineUrl)});
    const variant = (await import("@jitl/quickjs-singlefile-browser-release-sync")).default;
    const outcome = await createEngine(variant).then(
      (engine) => ({ restored: engine.restored }),
      (error) => ({ thrown: String(error) }),
    );
    console.log(JSON.stringify(outcome));
  `,
    { flags: ["--allow-read", "--allow-env"] },
  );
  assert.deepEqual(outcome, {
    thrown: "TypeError: the planted decoding fault",
  });
});
