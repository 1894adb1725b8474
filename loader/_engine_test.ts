import assert from "node:assert/strict";
import type {
  QuickJSSyncVariant,
  QuickJSWASMModule,
} from "quickjs-emscripten-core";
import singlefileVariant from "@jitl/quickjs-singlefile-browser-release-sync";
import wasmfileVariant from "@jitl/quickjs-wasmfile-release-sync";
import { createEngine, type Engine, stateRanges } from "./_engine.ts";

const MiB = 1024 * 1024;
/** The deepest a run's C stack may go: the largest maxStackSizeBytes, and slack. */
const STACK_BUDGET_BYTES = 4 * MiB + 512 * 1024;

const VARIANTS = {
  singlefile: singlefileVariant,
  wasmfile: wasmfileVariant,
} as unknown as Record<string, QuickJSSyncVariant>;

/** The bytes no run should ever write: between static data and the stack's reach. */
function untouchable(engine: Engine): Uint8Array {
  const [data, heap] = engine.ranges;
  return new Uint8Array(
    engine.memory.buffer,
    data!.end,
    heap!.start - STACK_BUDGET_BYTES - data!.end,
  );
}

function countNonZero(bytes: Uint8Array): number {
  let count = 0;
  for (const byte of bytes) if (byte !== 0) count++;
  return count;
}

const WORKLOADS = [
  "JSON.stringify(JSON.parse(JSON.stringify({ a: [1, 2, { b: 'c' }] })))",
  "const f = (n) => n === 0 ? 0 : 1 + f(n - 1); f(1000)",
  "const f = () => f(); try { f() } catch (e) { String(e) }",
  "'x'.repeat(1 << 20).replace(/x+?/g, 'y').length",
  "const a = []; for (let i = 0; i < 100000; i++) a.push({ i }); a.length",
  "new Uint8Array(8 << 20).length",
  "[...'abcdef'].sort().join('').localeCompare('b')",
  "try { null.x } catch (e) { e.stack }",
];

for (const [name, variant] of Object.entries(VARIANTS)) {
  Deno.test(`the ${name} engine copies static data and the heap, not the stack between them`, async () => {
    const engine = await createEngine(variant);
    assert.equal(engine.ranges.length, 2);
    const [data, heap] = engine.ranges;
    assert.equal(data!.start, 0);
    // The stack between them is about 5 MiB, more than any run may use.
    assert.ok(heap!.start - data!.end > STACK_BUDGET_BYTES + 256 * 1024);
    assert.ok(heap!.end > heap!.start);
  });

  Deno.test(`runs in the ${name} engine never write between static data and the stack's reach`, async () => {
    const engine = await createEngine(variant);
    assert.equal(countNonZero(untouchable(engine)), 0);
    engine.hooks = {
      load: () => ({ error: new Error("no modules") }),
      normalize: (_base, requested) => requested,
      interrupt: () => false,
      log: () => true,
    };
    for (const maxStack of [256 * 1024, 4 * MiB]) {
      engine.runtime.setMaxStackSize(maxStack);
      engine.runtime.setMemoryLimit(64 * MiB);
      for (const code of WORKLOADS) {
        const result = engine.context.evalCode(code);
        assert.equal("value" in result, true, code);
        engine.restore();
        assert.equal(countNonZero(untouchable(engine)), 0, code);
      }
    }
  });
}

for (const [name, variant] of Object.entries(VARIANTS)) {
  Deno.test(`the ${name} engine's capture() ends where dlmalloc's top chunk starts, and its heap counts against a run's limit`, async () => {
    const engine = await createEngine(variant);
    engine.hooks = {
      load: () => ({ error: new Error("no modules") }),
      normalize: (_base, requested) => requested,
      interrupt: () => false,
      log: () => true,
    };
    const [data, heap] = engine.ranges;
    const unchanged = engine.capture();
    assert.deepEqual(unchanged?.ranges, engine.ranges);
    engine.runtime.setMemoryLimit(64 * MiB);
    const kept = engine.context.evalCode(
      "export const kept = Array.from({ length: 4 }, (_, i) => 'x'.repeat(MiB + i));"
        .replace("MiB", String(MiB)),
      "kept.js",
      { type: "module" },
    );
    assert.equal("value" in kept, true);
    const snapshot = engine.capture();
    assert.ok(snapshot !== null);
    assert.deepEqual(snapshot.ranges[0], data);
    assert.equal(snapshot.ranges[1]!.start, heap!.start);
    assert.ok(snapshot.ranges[1]!.end >= heap!.end + 4 * MiB);
    // The 4 MiB the copy holds above the base do not fit a 2 MiB limit.
    engine.restore(snapshot);
    assert.equal(engine.reserve(2 * MiB), false);
    engine.restore(snapshot);
    assert.equal(engine.reserve(16 * MiB), true);
    // Restoring forgets the reserve: the base copy holds no block.
    engine.restore();
    assert.deepEqual(engine.capture()?.ranges, engine.ranges);
  });
}

/**
 * The bytes of dlmalloc's free chunks below its top chunk, and the span
 * they lie in, from its lowest address to the top chunk. dlmalloc's state
 * holds `topsize`, `least_addr`, `dv` and `top` in that order; a chunk's
 * header word is its size with bit 1 set when it is in use.
 */
function freeBelowTop(engine: Engine): { free: number; span: number } {
  const words = new Uint32Array(engine.memory.buffer);
  const [data, heap] = engine.ranges;
  const top = heap!.end - 8;
  const topSize = words[(top + 4) / 4]! & ~7;
  const fields: number[] = [];
  for (let i = 3; i < data!.end / 4; i++) {
    if (words[i] === top && words[i - 3] === topSize) fields.push(i);
  }
  assert.equal(fields.length, 1);
  const least = words[fields[0]! - 2]!;
  let free = 0;
  let chunk = least;
  while (chunk < top) {
    const header = words[(chunk + 4) / 4]!;
    const size = header & ~7;
    assert.ok(size > 0);
    if ((header & 0b10) === 0) free += size;
    chunk += size;
  }
  assert.equal(chunk, top);
  return { free, span: top - least };
}

for (const [name, variant] of Object.entries(VARIANTS)) {
  Deno.test(`the ${name} engine's hardened heap, which every run restores, is mostly live data`, async () => {
    const engine = await createEngine(variant, undefined, { image: null });
    const { free, span } = freeBelowTop(engine);
    // Evaluated as one script, the hardening left 47% of it free.
    assert.ok(free < span * 0.15, `${free} of ${span} bytes are free`);
  });
}

Deno.test("stateRanges() copies all of memory when it cannot find the heap's end", () => {
  const memory = new WebAssembly.Memory({ initial: 2 });
  const module = {} as unknown as QuickJSWASMModule;
  assert.deepEqual(stateRanges(module, memory, 65536), [
    { start: 0, end: 2 * 65536 },
  ]);
});

// The hardened console stops formatting and crossing once the host keeps
// no more lines: also a call whose argument's toJSON logged, 50 levels
// down, until the host said so while this call's own line was formatted.
for (const [name, variant] of Object.entries(VARIANTS)) {
  Deno.test(`the ${name} engine's console crosses to the host no more after the host keeps no more lines, also for a line formatted meanwhile`, async () => {
    const engine = await createEngine(variant);
    const crossed: string[] = [];
    engine.hooks = {
      load: () => ({ error: new Error("no modules") }),
      normalize: (_base, requested) => requested,
      interrupt: () => false,
      // Keeps the first line only.
      log: (_level, text) => {
        crossed.push(text);
        return crossed.length < 2;
      },
    };
    engine.runtime.setMemoryLimit(64 * MiB);
    const result = engine.context.evalCode(`function nest(level) {
  if (level === 0) return "leaf";
  return { toJSON() { console.log(nest(level - 1)); return "x".repeat(1000); } };
}
console.log(nest(50));
"done"`);
    assert.equal("value" in result, true);
    engine.restore();
    assert.equal(crossed.length, 2, "lines crossed");
    assert.deepEqual(crossed, ["leaf", `"${"x".repeat(1000)}"`]);
  });
}
