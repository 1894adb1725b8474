import assert from "node:assert/strict";
import type { SandboxModuleCatalog } from "../catalog/types.ts";
import type { SandboxResult } from "../protocol/mod.ts";
import { createQuickJSLoader } from "./quickjs_loader.ts";
import {
  createTestCatalog,
  frozenCatalog,
  type TestPack,
} from "./_test_catalog_test.ts";
import {
  WARM_GRAPH_BUDGET_BYTES,
  type WarmGraph,
  WarmGraphs,
} from "./_warm_graphs.ts";
import type { Snapshot } from "./_engine.ts";

const MiB = 1024 * 1024;

const PACKS: TestPack[] = [
  {
    name: "@t/counter",
    exports: { ".": "./index.js" },
    files: {
      "./index.js": `import { table } from "./table.js";
let count = 0;
export const next = () => ++count;
export const remember = (key, value) => { table.set(key, value); return table.size; };
export const drawn = Math.random();
export const config = { mode: "safe" };
console.log("counter evaluated");`,
      "./table.js": "export const table = new Map([['seed', 1]]);",
    },
  },
  {
    name: "@t/heavy",
    exports: { ".": "./index.js" },
    files: {
      "./index.js":
        "export const blocks = Array.from({ length: 5 }, (_, i) => 'x'.repeat(1024 * 1024 - i));",
    },
  },
  {
    name: "@t/peak",
    exports: { ".": "./index.js" },
    files: {
      // 6 MiB made and let go at its top level: the warm copy holds none.
      "./index.js": `let made = 0;
{
  const blocks = [];
  for (let i = 0; i < 6; i++) blocks.push("x".repeat(1024 * 1024 - i));
  made = blocks.length;
}
export { made };`,
    },
  },
  {
    name: "@t/deep",
    exports: { ".": "./index.js" },
    files: {
      "./index.js":
        "const down = (n) => n === 0 ? 0 : 1 + down(n - 1);\nexport const depth = down(600);\nexport const drawn = Math.random();",
    },
  },
  {
    name: "@t/odd",
    exports: {
      "./throws": "./throws.js",
      "./loops": "./loops.js",
      "./pending": "./pending.js",
      "./dynamic": "./dynamic.js",
      "./chatty": "./chatty.js",
      "./asks": "./asks.js",
    },
    files: {
      "./throws.js": "throw new Error('pack failed at load');",
      "./loops.js": "for (;;) {}",
      "./pending.js":
        "export const state = { ticks: 0 };\nPromise.resolve().then(() => { state.ticks++; });",
      "./dynamic.js": "export const p = import('./throws.js');",
      "./chatty.js":
        "for (let i = 0; i < 100; i++) console.log('x'.repeat(1000));\nexport const n = 100;",
      // A block of 2 GiB, which the allocator refuses without asking the
      // memory, caught at the top level.
      "./asks.js":
        "let answer = 'fit';\ntry { new ArrayBuffer(2 ** 31 - 1); } catch (error) { answer = error.name; }\nexport { answer };",
    },
  },
];
const catalog = createTestCatalog(PACKS);

function value(result: SandboxResult): unknown {
  assert.equal(result.ok, true, JSON.stringify(result));
  return result.ok ? result.value : undefined;
}

function code(result: SandboxResult): string {
  assert.equal(result.ok, false, JSON.stringify(result));
  return result.ok ? "" : `${result.error.code}: ${result.error.message}`;
}

Deno.test("pack top-level state one run writes is absent from the next, with the pack graph kept warm", async (t) => {
  const catalogs = {
    "packs a catalog may change": catalog,
    "frozen packs, whose guest plans the loader keeps": frozenCatalog(
      createTestCatalog(PACKS),
    ),
  };
  for (const [name, each] of Object.entries(catalogs)) {
    await t.step(name, () => freshStateHolds(each));
  }
});

async function freshStateHolds(catalog: SandboxModuleCatalog): Promise<void> {
  using loader = await createQuickJSLoader({ catalog });
  const declaration = {
    source: `import { next, remember, config } from "@t/counter";
const before = config.mode;
config.mode = "changed";
config.extra = 1;
export default [before, next(), next(), remember("run", 1), Object.keys(config)];`,
    packages: ["@t/counter"],
  };
  for (let i = 0; i < 5; i++) {
    assert.deepEqual(value(await loader.run(declaration)), [
      "safe",
      1,
      2,
      2,
      ["mode", "extra"],
    ]);
  }
}

Deno.test("a warm pack graph keeps its top-level values and logs, and the guest gets fresh randomness", async () => {
  using loader = await createQuickJSLoader({ catalog });
  const declaration = {
    source: `import { drawn } from "@t/counter";
console.log("guest");
export default [drawn, Math.random()];`,
    packages: ["@t/counter"],
  };
  const runs = [];
  for (let i = 0; i < 4; i++) runs.push(await loader.run(declaration));
  const values = runs.map((run) => value(run) as [number, number]);
  // The first run evaluated the pack under its own limit; the pack's top
  // level then ran once more, before the copy every later run starts from.
  const warm = values.slice(1);
  assert.equal(new Set(warm.map(([drawn]) => drawn)).size, 1);
  assert.equal(new Set(values.map(([, guest]) => guest)).size, 4);
  for (const run of runs) {
    assert.deepEqual(run.logs, [
      { level: "log", message: "counter evaluated" },
      { level: "log", message: "guest" },
    ]);
  }
});

Deno.test("a warm graph stays warm for guests that use more memory while they run, up to half their limit", async () => {
  using loader = await createQuickJSLoader({ catalog });
  // 12 MiB made and let go by the guest, as a large library's calls do:
  // its engine's memory grows by that much, which it keeps for the next
  // run rather than be replaced with its warm graphs.
  const declaration = {
    source: `import { drawn } from "@t/counter";
const blocks = [];
for (let i = 0; i < 12; i++) blocks.push("x".repeat(1024 * 1024 - i));
export default [blocks.length, drawn];`,
    packages: ["@t/counter"],
  };
  const values = [];
  for (let i = 0; i < 4; i++) {
    values.push(value(await loader.run(declaration)) as [number, number]);
  }
  assert.deepEqual(values.map(([count]) => count), [12, 12, 12, 12]);
  const warm = values.slice(1).map(([, drawn]) => drawn);
  assert.equal(new Set(warm).size, 1);
});

Deno.test("a graph that throws, loops, leaves jobs pending or uses import() at its top level fails alike every run", async () => {
  using loader = await createQuickJSLoader({ catalog });
  const cases: [string, string][] = [
    ["./throws", "GUEST_ERROR: pack failed at load"],
    ["./loops", "TIMEOUT"],
    ["./dynamic", "IMPORT_DYNAMIC"],
  ];
  for (const [subpath, expected] of cases) {
    const declaration = {
      source: `import "@t/odd/${subpath.slice(2)}";\nexport default 1;`,
      packages: ["@t/odd"],
    };
    for (let i = 0; i < 3; i++) {
      const failure = code(await loader.run(declaration, { timeoutMs: 100 }));
      assert.ok(failure.startsWith(expected), `${subpath}: ${failure}`);
    }
  }
  const pending = {
    source:
      'import { state } from "@t/odd/pending";\nexport default state.ticks++;',
    packages: ["@t/odd"],
  };
  for (let i = 0; i < 3; i++) {
    assert.equal(value(await loader.run(pending)), 0);
  }
});

Deno.test("a graph whose top level caught a request too large for the allocator answers alike every run, and a guest's own such request is OUT_OF_MEMORY", async () => {
  using loader = await createQuickJSLoader({ catalog });
  const caught = {
    source: 'import { answer } from "@t/odd/asks";\nexport default answer;',
    packages: ["@t/odd"],
  };
  const asks = {
    source:
      'import { answer } from "@t/odd/asks";\nexport default new ArrayBuffer(2 ** 31 - 1).byteLength;',
    packages: ["@t/odd"],
  };
  // A small limit and the default one: the allocator's record of the
  // failed request, kept in a warm copy, failed the reserve of the one and
  // hid the guest's own failed request from the other.
  for (const memoryLimitBytes of [16 * MiB, undefined]) {
    for (let i = 0; i < 3; i++) {
      const run = `${memoryLimitBytes} bytes, run ${i + 1}`;
      const answer = await loader.run(caught, { memoryLimitBytes });
      assert.equal(value(answer), "InternalError", run);
      const failure = code(await loader.run(asks, { memoryLimitBytes }));
      assert.ok(failure.startsWith("OUT_OF_MEMORY"), `${run}: ${failure}`);
    }
  }
  assert.equal(value(await loader.run("export default 1;")), 1);
});

Deno.test("a pack graph's top-level logs are replayed under each run's own log cap", async () => {
  using loader = await createQuickJSLoader({ catalog });
  const declaration = {
    source: 'import { n } from "@t/odd/chatty";\nexport default n;',
    packages: ["@t/odd"],
  };
  for (const maxLogBytes of [100_000, 5_000, 100_000]) {
    const result = await loader.run(declaration, { maxLogBytes });
    assert.equal(value(result), 100);
    assert.equal(result.logs.length, maxLogBytes === 5_000 ? 5 : 100);
    assert.equal(result.logsTruncated, maxLogBytes === 5_000);
  }
});

Deno.test("what a warm pack graph holds counts against each run's memory limit", async () => {
  using loader = await createQuickJSLoader({ catalog });
  const declaration = {
    source: 'import { blocks } from "@t/heavy";\nexport default blocks.length;',
    packages: ["@t/heavy"],
  };
  // The 5 MiB the pack keeps do not fit 4 MiB, cold or warm.
  assert.match(
    code(await loader.run(declaration, { memoryLimitBytes: 4 * MiB })),
    /^OUT_OF_MEMORY/,
  );
  assert.equal(value(await loader.run(declaration)), 5);
  assert.match(
    code(await loader.run(declaration, { memoryLimitBytes: 4 * MiB })),
    /^OUT_OF_MEMORY/,
  );
  // The guest gets what is left of its limit above the pack's 5 MiB.
  const greedy = {
    source: `import { blocks } from "@t/heavy";
const more = [];
for (let i = 0; i < 5; i++) more.push("y".repeat(1024 * 1024 - i));
export default blocks.length + more.length;`,
    packages: ["@t/heavy"],
  };
  assert.match(
    code(await loader.run(greedy, { memoryLimitBytes: 8 * MiB })),
    /^OUT_OF_MEMORY/,
  );
  assert.equal(
    value(await loader.run(greedy, { memoryLimitBytes: 16 * MiB })),
    10,
  );
});

Deno.test("what a pack's top level allocates and lets go while it runs counts against each run's memory limit", async () => {
  using loader = await createQuickJSLoader({ catalog });
  const declaration = {
    source: 'import { made } from "@t/peak";\nexport default made;',
    packages: ["@t/peak"],
  };
  // 6 MiB do not fit 2 MiB, whether the run makes the warm graph, finds
  // it made under a larger limit, or the loader was made for 2 MiB.
  const small = { memoryLimitBytes: 2 * MiB };
  assert.match(code(await loader.run(declaration, small)), /^OUT_OF_MEMORY/);
  assert.equal(value(await loader.run(declaration)), 6);
  assert.match(code(await loader.run(declaration, small)), /^OUT_OF_MEMORY/);
  assert.equal(
    value(await loader.run(declaration, { memoryLimitBytes: 8 * MiB })),
    6,
  );
  using sized = await createQuickJSLoader({ catalog, ...small });
  assert.match(code(await sized.run(declaration)), /^OUT_OF_MEMORY/);
  assert.match(code(await sized.run(declaration)), /^OUT_OF_MEMORY/);
});

Deno.test("the stack a pack's top level takes while it runs counts against each run's stack limit", async () => {
  using loader = await createQuickJSLoader({ catalog });
  const declaration = {
    source: 'import { depth } from "@t/deep";\nexport default depth;',
    packages: ["@t/deep"],
  };
  const small = { maxStackSizeBytes: 64 * 1024 };
  assert.equal(
    value(await loader.run({ source: "export default 1;" }, small)),
    1,
  );
  // Warm under the default stack limit, then a run whose limit is too small.
  assert.equal(value(await loader.run(declaration)), 600);
  assert.equal(value(await loader.run(declaration)), 600);
  assert.match(code(await loader.run(declaration, small)), /^STACK_OVERFLOW/);
  assert.equal(value(await loader.run(declaration)), 600);
});

Deno.test("a run whose small limits fail a pack graph's top level leaves the graph warm for runs with larger limits", async () => {
  using loader = await createQuickJSLoader({ catalog });
  const declaration = {
    source:
      'import { depth, drawn } from "@t/deep";\nexport default [depth, drawn];',
    packages: ["@t/deep"],
  };
  const small = { maxStackSizeBytes: 32 * 1024 };
  // Another caller's run, with a stack too small for the pack's top level,
  // comes first.
  assert.match(code(await loader.run(declaration, small)), /^STACK_OVERFLOW/);
  const drawn = [];
  for (let i = 0; i < 4; i++) {
    const [depth, value_] = value(await loader.run(declaration)) as [
      number,
      number,
    ];
    assert.equal(depth, 600);
    drawn.push(value_);
  }
  // The first run checks the graph fits, the second makes its warm copy:
  // from then on every run starts from that copy, with its draw.
  assert.equal(new Set(drawn.slice(1)).size, 1, String(drawn));
  assert.match(code(await loader.run(declaration, small)), /^STACK_OVERFLOW/);
});

Deno.test("a pack whose bytes change gets its own warm graph", async () => {
  const inner = createTestCatalog([{
    name: "@t/v",
    exports: { ".": "./index.js" },
    files: { "./index.js": "export default 'first';" },
  }]);
  let source = "export default 'first';";
  let digest = "sha256-first";
  const changing: SandboxModuleCatalog = {
    ...inner,
    resolveForExecution(declaration) {
      const resolution = inner.resolveForExecution(declaration);
      for (const module of Object.values(resolution.modules)) {
        module.source = source;
        module.graphDigest = digest;
      }
      return resolution;
    },
  };
  using loader = await createQuickJSLoader({ catalog: changing });
  const declaration = {
    source: 'import v from "@t/v";\nexport default v;',
    packages: ["@t/v"],
  };
  assert.equal(value(await loader.run(declaration)), "first");
  source = "export default 'second';";
  digest = "sha256-second";
  assert.equal(value(await loader.run(declaration)), "second");
});

function graphOf(byteLength: number): WarmGraph {
  const snapshot: Snapshot = { ranges: [], bytes: [], byteLength };
  return { snapshot, logs: [] };
}

Deno.test("WarmGraphs keeps its budget by dropping the least recently used graph", () => {
  const graphs = new WarmGraphs();
  const quarter = WARM_GRAPH_BUDGET_BYTES / 4;
  for (const key of ["a", "b", "c", "d"]) {
    graphs.add(key, graphOf(quarter));
  }
  assert.ok(graphs.get("a") !== undefined);
  graphs.add("e", graphOf(quarter));
  assert.equal(graphs.get("b"), undefined);
  for (const key of ["a", "c", "d", "e"]) assert.ok(graphs.get(key), key);
  assert.deepEqual(graphs.size, { graphs: 4, bytes: WARM_GRAPH_BUDGET_BYTES });
  graphs.add("huge", graphOf(WARM_GRAPH_BUDGET_BYTES + 1));
  assert.equal(graphs.get("huge"), undefined);
  assert.equal(graphs.size.graphs, 4);
});

Deno.test("WarmGraphs refuses a graph for runs with limits no larger than those it failed under", () => {
  const graphs = new WarmGraphs();
  const limits = (memoryLimitBytes: number, maxStackSizeBytes: number) => ({
    memoryLimitBytes,
    maxStackSizeBytes,
  });
  graphs.refuse("x", limits(16 * MiB, 64 * 1024));
  assert.equal(graphs.refusedFor("x", limits(16 * MiB, 64 * 1024)), true);
  assert.equal(graphs.refusedFor("x", limits(8 * MiB, 32 * 1024)), true);
  assert.equal(graphs.refusedFor("x", limits(64 * MiB, 32 * 1024)), false);
  assert.equal(graphs.refusedFor("x", limits(8 * MiB, 256 * 1024)), false);
  assert.equal(graphs.refusedFor("y", limits(MiB, 32 * 1024)), false);
  graphs.refuse("x", limits(64 * MiB, 256 * 1024));
  assert.equal(graphs.refusedFor("x", limits(64 * MiB, 256 * 1024)), true);
  assert.equal(graphs.refusedFor("x", limits(16 * MiB, 64 * 1024)), true);
});

Deno.test("each run's stack limit holds, whether it starts from the hardened copy or a warm graph", async () => {
  using loader = await createQuickJSLoader({ catalog });
  const recurse =
    "const depth = (n) => n === 0 ? 0 : 1 + depth(n - 1);\nexport default depth(500);";
  const sources = [
    { source: recurse },
    {
      source: `import { next } from "@t/counter";\n${recurse}`,
      packages: ["@t/counter"],
    },
  ];
  for (const declaration of sources) {
    for (const maxStackSizeBytes of [MiB, 32 * 1024, MiB, 32 * 1024]) {
      const result = await loader.run(declaration, { maxStackSizeBytes });
      if (maxStackSizeBytes === 32 * 1024) {
        assert.match(code(result), /^STACK_OVERFLOW/);
      } else {
        assert.equal(value(result), 500);
      }
    }
  }
});
