import assert from "node:assert/strict";
import { createQuickJSLoader, type QuickJSLoader } from "./quickjs_loader.ts";
import { createTestCatalog } from "./_test_catalog_test.ts";

// What one run allocates above the restored heap must be gone from the
// engine's memory once the next run started, however the first ended:
// another caller's values are otherwise there for any engine flaw that
// reads past an object. The test reads the engine's whole memory, which
// it records as the loader makes it; a pool's runner runs the same
// executor and engine, in a thread or process this test cannot read.

const MiB = 1024 * 1024;

const catalog = createTestCatalog([{
  name: "@t/plain",
  exports: { ".": "./index.js" },
  files: { "./index.js": "export const label = 'plain';" },
}]);

/** Plants `context.secret` in fresh allocations: a long string, a typed array, many objects. */
const PLANT = `const plant = (secret, arrayBytes) => {
  const kept = [secret.repeat(20000)];
  const bytes = new Uint8Array(arrayBytes);
  for (let i = 0; i < secret.length; i++) bytes[i] = secret.charCodeAt(i);
  for (let n = secret.length; n < bytes.length; n *= 2) bytes.copyWithin(n, 0, n);
  kept.push(bytes);
  for (let i = 0; i < 2000; i++) kept.push({ value: secret + ":" + i });
  globalThis.kept = kept;
  return kept.length;
};`;

/**
 * How each planting run ends, and the limits it runs with. A body runs in
 * the guest's default function, or with `topLevel` at the module's top
 * level, where a thrown value is described outside the guest's own code
 * (the run's memory made room for that, or did not need to).
 */
const ENDINGS: Record<
  string,
  { body: string; limits?: object; topLevel?: boolean }
> = {
  "a value": { body: "return plant(c.secret, 1 << 20);" },
  "a guest error": {
    body: "plant(c.secret, 1 << 20); throw new Error('failed');",
  },
  "TIMEOUT": {
    body: "plant(c.secret, 1 << 20); for (;;) {}",
    limits: { timeoutMs: 200 },
  },
  "OUT_OF_MEMORY": {
    body:
      "plant(c.secret, 1 << 20); const more = []; for (;;) more.push('x'.repeat(1e5) + more.length);",
    limits: { memoryLimitBytes: 16 * MiB },
  },
  // Under the growth that replaces the engine (half its 64 MiB limit).
  "a grown memory": { body: "return plant(c.secret, 20 * MiB);" },
  "a guest error at the top level": {
    body: "plant(c.secret, 1 << 20); throw new Error('failed');",
    topLevel: true,
  },
  "a thrown non-Error whose getter plants while it is described": {
    body:
      "throw { get message() { plant(c.secret, 1 << 20); return 'failed'; } };",
    topLevel: true,
  },
  // Under 4 MiB left of the limit: the reserve gives room back for the
  // getter to plant in.
  "a getter that plants near the limit": {
    body: `const more = [];
try { for (;;) more.push('x'.repeat(1e5) + more.length); } catch {}
more.length -= 25;
throw { get message() { plant(c.secret, 1 << 20); return 'failed'; } };`,
    limits: { memoryLimitBytes: 16 * MiB },
    topLevel: true,
  },
};

function randomSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `TENANT-${
    Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")
  }`;
}

/** The memories made while it is in force, in order. */
function recordMemories(): WebAssembly.Memory[] & Disposable {
  const Original = WebAssembly.Memory;
  const memories: WebAssembly.Memory[] = [];
  WebAssembly.Memory = class extends Original {
    constructor(descriptor: WebAssembly.MemoryDescriptor) {
      super(descriptor);
      memories.push(this);
    }
  };
  return Object.assign(memories, {
    [Symbol.dispose]: () => {
      WebAssembly.Memory = Original;
    },
  });
}

/** How often `secret` appears anywhere in `memory`. */
function occurrences(memory: WebAssembly.Memory, secret: string): number {
  const text = new TextDecoder("latin1").decode(new Uint8Array(memory.buffer));
  let count = 0;
  for (let i = text.indexOf(secret); i >= 0; i = text.indexOf(secret, i + 1)) {
    count++;
  }
  return count;
}

async function plantThenIdle(
  loader: QuickJSLoader,
  memories: readonly WebAssembly.Memory[],
  { ending, packages }: { ending: string; packages: string[] },
): Promise<void> {
  const { body, limits, topLevel } = ENDINGS[ending]!;
  const imports = packages.map((name) => `import "${name}";\n`).join("");
  const secret = randomSecret();
  // The top level has no context: its source holds the secret instead,
  // and is copied into the run's memory too.
  const code = topLevel
    ? `const c = { secret: ${JSON.stringify(secret)} };\n${body}`
    : `export default (c) => { ${body} };`;
  const planted = await loader.run({
    source: `${imports}const MiB = ${MiB};\n${PLANT}\n${code}`,
    packages,
  }, { context: { secret }, ...limits });
  assert.equal(
    planted.ok,
    ending === "a value" || ending === "a grown memory",
    JSON.stringify(planted).slice(0, 300),
  );
  const memory = memories.at(-1)!;
  // The run ended with the secret in the engine's memory...
  assert.ok(occurrences(memory, secret) > 0, "the secret was planted");
  const idle = await loader.run({
    source: `${imports}export default 0;`,
    packages,
  });
  assert.equal(idle.ok && idle.value, 0, JSON.stringify(idle));
  // ...and the next run's start left none of it.
  assert.equal(memories.at(-1), memory, "the engine was kept");
  assert.equal(occurrences(memory, secret), 0);
}

Deno.test("what a run allocated above the restored heap is cleared before the next run starts, however the run ended", async (t) => {
  using memories = recordMemories();
  using loader = await createQuickJSLoader({ catalog });
  for (const ending of Object.keys(ENDINGS)) {
    await t.step(
      ending,
      () => plantThenIdle(loader, memories, { ending, packages: [] }),
    );
  }
});

Deno.test("what a run allocated above a warm pack graph's copy is cleared before the next run starts", async (t) => {
  using memories = recordMemories();
  using loader = await createQuickJSLoader({ catalog });
  const packages = ["@t/plain"];
  // The first run of a graph evaluates it in place, the second makes its
  // warm copy, the next ones start from it.
  for (let i = 0; i < 3; i++) {
    await t.step(
      `run ${i + 1}`,
      () => plantThenIdle(loader, memories, { ending: "a value", packages }),
    );
  }
  for (const ending of Object.keys(ENDINGS)) {
    await t.step(
      ending,
      () => plantThenIdle(loader, memories, { ending, packages }),
    );
  }
});
