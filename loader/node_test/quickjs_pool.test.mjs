// The QuickJS pool on Node: runners are worker_threads workers of the Node
// build's runner (`deno task build:node` writes it to dist/node/loader/).

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import {
  createQuickJSLoader,
  createQuickJSPool,
  EMPTY_CATALOG as catalog,
  RUNNER_URL,
  withPool,
} from "./_node_pool.mjs";

const LOADER_URL = new URL("../../dist/node/loader/mod.js", import.meta.url);
const CATALOG_URL = new URL("../../dist/node/catalog/mod.js", import.meta.url);

/** A pool of two runners over the empty catalog. */
function withEmptyPool(use) {
  return withPool(catalog, use);
}

test("createQuickJSPool() on Node runs on worker threads with the loader's answers and denials", async () => {
  await withEmptyPool(async (pool) => {
    assert.equal(pool.isolation, "worker");
    const result = await pool.run(
      { source: "export default (c) => c.n * 2;" },
      { context: { n: 21 } },
    );
    assert.equal(result.ok && result.value, 42);
    const denied = await pool.run({
      source: 'import fs from "node:fs"; export default 1;',
    });
    assert.equal(!denied.ok && denied.error.code, "IMPORT_NODE_BUILTIN");
  });
});

test("createQuickJSPool() on Node ends a guest inside one long built-in call with TIMEOUT while the host keeps turning", async () => {
  await withEmptyPool(async (pool) => {
    for (
      const { source, killed } of [
        {
          // The call runs for seconds and QuickJS checks no interrupt in
          // it: only the pool's killing its runner ends it in time.
          source:
            "export default Array.prototype.indexOf.call({ length: 2e9 }, 1);",
          killed: true,
        },
        {
          source:
            "function spin() { for (;;) {} } function again() { return Promise.resolve().then(spin).catch(again); } export default () => again();",
          killed: false,
        },
      ]
    ) {
      let ticks = 0;
      const interval = setInterval(() => ticks++, 1);
      const replaced = pool.replacements;
      const result = await pool.run({ source }, { timeoutMs: 300 });
      clearInterval(interval);
      assert.equal(!result.ok && result.error.code, "TIMEOUT");
      // This thread's timer fired while the guest ran: a guest on this
      // thread would have left it at zero. How often is the benchmarks'
      // business.
      assert.ok(ticks >= 1, "this thread's timer never fired during the run");
      if (killed) {
        assert.equal(pool.replacements, replaced + 1, "no runner was killed");
      }
    }
  });
});

test("createQuickJSPool() on Node ends many small allocations with OUT_OF_MEMORY", async () => {
  await withEmptyPool(async (pool) => {
    const result = await pool.run({
      source:
        "const a = []; for (let i = 0; i < 3000; i++) a.push('x'.repeat(1e5) + i); export default a.length;",
    }, { memoryLimitBytes: 16 * 1024 * 1024 });
    assert.equal(!result.ok && result.error.code, "OUT_OF_MEMORY");
    const after = await pool.run({ source: "export default 'alive';" });
    assert.equal(after.ok && after.value, "alive");
  });
});

test("createQuickJSPool() on Node ends a computing guest when its signal aborts", async () => {
  await withEmptyPool(async (pool) => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    // The guest runs until its time limit unless the abort ends it first:
    // a run that waited for the limit would answer TIMEOUT.
    const result = await pool.run({ source: "for (;;) {}" }, {
      timeoutMs: 60_000,
      signal: controller.signal,
    });
    assert.equal(!result.ok && result.error.code, "ABORTED");
  });
});

test("createQuickJSPool() on Node keeps the lines a run logged before its worker was terminated, within maxLogBytes", async () => {
  await withEmptyPool(async (pool) => {
    const logged = "console.log('before'); console.warn('still', 2);";
    const longCall = "Array.prototype.indexOf.call({ length: 2e9 }, 1)";
    const expected = [
      { level: "log", message: "before" },
      { level: "warn", message: "still 2" },
    ];
    const timedOut = await pool.run(
      { source: `${logged} export default ${longCall};` },
      { timeoutMs: 300 },
    );
    assert.equal(!timedOut.ok && timedOut.error.code, "TIMEOUT");
    assert.deepEqual(timedOut.logs, expected);
    assert.equal(timedOut.logsTruncated, false);

    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), 500);
    const aborted = await pool.run({ source: `${logged} for (;;) {}` }, {
      timeoutMs: 60_000,
      signal: controller.signal,
    });
    clearTimeout(timer);
    assert.equal(!aborted.ok && aborted.error.code, "ABORTED");
    assert.deepEqual(aborted.logs, expected);

    const truncated = await pool.run(
      {
        source:
          `console.log('abcdef'); console.log('ghijkl'); console.log('m'); export default ${longCall};`,
      },
      { timeoutMs: 300, maxLogBytes: 10 },
    );
    assert.equal(!truncated.ok && truncated.error.code, "TIMEOUT");
    assert.deepEqual(truncated.logs, [{ level: "log", message: "abcdef" }]);
    assert.equal(truncated.logsTruncated, true);
  });
});

/** A console line whose collection throws, as a bug of the pool would. */
const FAULTY_LINE = "cordon test: collecting this line throws";

/**
 * Runs `use` while the pool's log collector throws on {@linkcode FAULTY_LINE}:
 * it measures each line with a TextEncoder, from inside the pool's listener
 * of its workers' messages (a worker has a TextEncoder of its own).
 */
async function withFaultyCollector(use) {
  const { encode } = TextEncoder.prototype;
  TextEncoder.prototype.encode = function (input) {
    if (input === FAULTY_LINE) throw new RangeError("the planted fault");
    return encode.call(this, input);
  };
  try {
    return await use();
  } finally {
    TextEncoder.prototype.encode = encode;
  }
}

test("createQuickJSPool() on Node ends a run whose worker's message it threw on with SANDBOX_CRASHED naming what was thrown, and runs the next one, where the throw escaped the worker's listener as an uncaught exception", async () => {
  const pool = await createQuickJSPool({
    catalog,
    size: 1,
    runnerUrl: RUNNER_URL,
  });
  try {
    const replaced = pool.replacements;
    const result = await withFaultyCollector(() =>
      pool.run(
        {
          source: `console.log(${
            JSON.stringify(FAULTY_LINE)
          }); export default 1;`,
        },
        // Calm: the run ends at once when the fault is caught; the deadline
        // is how it ended when it was not.
        { timeoutMs: 20_000 },
      )
    );
    assert.equal(!result.ok && result.error.code, "SANDBOX_CRASHED");
    assert.match(
      !result.ok ? result.error.message : "",
      /reading its output failed in this process \(RangeError: the planted fault\)/,
    );
    assert.ok(pool.replacements > replaced, "the runner was not replaced");
    const next = await pool.run({ source: "export default 2;" });
    assert.equal(next.ok && next.value, 2, JSON.stringify(next));
  } finally {
    await pool[Symbol.asyncDispose]();
  }
});

test("createQuickJSPool() and createQuickJSLoader() on Node refuse a catalog whose reads throw, or that lacks a method, with a TypeError naming catalog", async () => {
  const throwing = new Proxy(catalog, {
    get() {
      throw new Error("the catalog's store is closed");
    },
  });
  const partial = { resolveForExecution: () => catalog.resolveForExecution };
  const cases = [
    [
      "pool",
      () => createQuickJSPool({ catalog: throwing, runnerUrl: RUNNER_URL }),
      "Cannot create the QuickJS pool: reading catalog.resolveForExecution threw: the catalog's store is closed",
    ],
    [
      "pool",
      () => createQuickJSPool({ catalog: partial, runnerUrl: RUNNER_URL }),
      "Cannot create the QuickJS pool: catalog must be a SandboxModuleCatalog: it has no authorizeDelivery and summaries methods; implement them",
    ],
    [
      "loader",
      () => createQuickJSLoader({ catalog: throwing }),
      "Cannot create the QuickJS loader: reading catalog.resolveForExecution threw: the catalog's store is closed",
    ],
  ];
  for (const [, create, message] of cases) {
    await assert.rejects(create, { name: "TypeError", message });
  }
});

test("createQuickJSPool() on Node without the Node build's runner fails with SANDBOX_UNAVAILABLE that says to pass runnerUrl", async () => {
  await assert.rejects(createQuickJSPool({ catalog, size: 1 }), (error) => {
    assert.equal(error.code, "SANDBOX_UNAVAILABLE");
    assert.match(
      error.message,
      /; pass runnerUrl: the file URL of the Node build's dist\/node\/loader\/quickjs_runner\.js$/,
    );
    return true;
  });
});

test("createQuickJSPool() on Node with a runnerUrl of no file fails with SANDBOX_UNAVAILABLE that names the runner and why it did not load", async () => {
  const runnerUrl = new URL("./no_such_runner.js", import.meta.url);
  await assert.rejects(
    createQuickJSPool({ catalog, size: 1, runnerUrl }),
    (error) => {
      assert.equal(error.code, "SANDBOX_UNAVAILABLE");
      assert.ok(
        error.message.includes(
          `the runner ${runnerUrl.href} did not load: Cannot find module`,
        ),
        error.message,
      );
      return true;
    },
  );
});

test("createQuickJSPool() on a Node older than 20.16 fails with SANDBOX_UNAVAILABLE naming the version it needs, and runs in-thread only when asked", async () => {
  // Node 20.16 added process.getBuiltinModule; without it is how an older
  // Node looks to the pool.
  const getBuiltinModule = process.getBuiltinModule;
  delete process.getBuiltinModule;
  try {
    for (const isolation of [undefined, "worker"]) {
      await assert.rejects(
        createQuickJSPool({
          catalog,
          size: 1,
          isolation,
          runnerUrl: RUNNER_URL,
        }),
        (error) => {
          assert.equal(error.code, "SANDBOX_UNAVAILABLE");
          assert.match(
            error.message,
            /need Node 20\.16 or later \(process\.getBuiltinModule\), and this is Node \d+\.\d+\.\d+; upgrade Node, or pass isolation "in-thread"/,
          );
          assert.ok(
            error.message.includes(`this is Node ${process.versions.node};`),
            error.message,
          );
          return true;
        },
      );
    }
    const pool = await createQuickJSPool({ catalog, isolation: "in-thread" });
    try {
      assert.equal(pool.isolation, "in-thread");
      const result = await pool.run({ source: "export default 1 + 1;" });
      assert.equal(result.ok && result.value, 2);
    } finally {
      await pool[Symbol.asyncDispose]();
    }
  } finally {
    process.getBuiltinModule = getBuiltinModule;
  }
});

test("createQuickJSPool() on Node leaves a script that never disposes it free to exit once its runs are answered, where its idle workers kept the process alive", async () => {
  // The two minutes guard against a hang; a run the pool let go of while
  // it was under way would end the script early instead, its top-level
  // await unsettled, with exit code 13.
  const script = `
import { createQuickJSPool } from ${JSON.stringify(LOADER_URL.href)};
import { EMPTY_CATALOG } from ${JSON.stringify(CATALOG_URL.href)};
const pool = await createQuickJSPool({
  catalog: EMPTY_CATALOG,
  size: 1,
  runnerUrl: new URL(${JSON.stringify(RUNNER_URL.href)}),
});
const answers = [];
for (const source of ["export default 1;", "for (;;) {}", "export default 2;"]) {
  const result = await pool.run({ source }, { timeoutMs: 300 });
  answers.push(result.ok ? result.value : result.error.code);
}
console.log(JSON.stringify(answers));
`;
  const dir = await mkdtemp(join(tmpdir(), "cordon pool script "));
  try {
    // A file, not --eval: the pool's workers would inherit --input-type.
    await writeFile(join(dir, "script.mjs"), script);
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [join(dir, "script.mjs")],
      { timeout: 120_000 },
    );
    // The third run waited for the worker that replaced the one terminated.
    assert.deepEqual(JSON.parse(stdout), [1, "TIMEOUT", 2]);
  } finally {
    await rm(dir, { recursive: true });
  }
});

/** Holds the pool's runner for as long as its signal lets it. */
const LONG_CALL = "Array.prototype.indexOf.call({ length: 2e9 }, 1)";

/** Which requester each run is, by a letter: `-` for none. */
function requesterOf(letter) {
  if (letter === "-") return undefined;
  // X and Y share a tenant and are two requesters.
  if (letter === "X") return { tenantId: "t", principalId: "x" };
  if (letter === "Y") return { tenantId: "t", principalId: "y" };
  return { tenantId: letter };
}

/**
 * A pool of one runner held by a long guest, with a run of each letter's
 * requester waiting for it; each run answers its own index.
 */
async function heldPool(letters, poolOptions = {}) {
  const pool = await createQuickJSPool({
    ...poolOptions,
    catalog,
    size: 1,
    runnerUrl: RUNNER_URL,
  });
  const holder = new AbortController();
  const holding = pool.run({ source: `export default ${LONG_CALL};` }, {
    timeoutMs: 60_000,
    signal: holder.signal,
  });
  const waits = [...letters].map((letter, i) => {
    const requester = requesterOf(letter);
    return pool.run(
      { source: `export default ${i};` },
      requester === undefined ? {} : { requester },
    );
  });
  // Their preparations end within the turn: from the next one on, each
  // waits for the runner.
  await new Promise((resolve) => setTimeout(resolve, 0));
  return {
    pool,
    waits,
    letGo: () => holder.abort(),
    async dispose() {
      holder.abort();
      await holding;
      await pool[Symbol.asyncDispose]();
    },
  };
}

/**
 * The letters of `waits` in the order they were answered, each run's own
 * requester's runs in the order they were handed in.
 */
async function answerOrder(waits, letters) {
  const answered = [];
  await Promise.all(waits.map((wait, i) =>
    wait.then((result) => {
      assert.equal(result.ok && result.value, i, JSON.stringify(result));
      answered.push(i);
    })
  ));
  const lastOf = new Map();
  for (const index of answered) {
    const letter = letters[index];
    assert.ok((lastOf.get(letter) ?? -1) < index, `${letter} out of order`);
    lastOf.set(letter, index);
  }
  return answered.map((index) => letters[index]).join("");
}

/**
 * What turns by requester answer for `letters` waiting at once, the
 * requesters taking their first turns in the order `answered` shows.
 */
function inTurns(letters, answered) {
  const left = new Map();
  for (const letter of answered) left.set(letter, 0);
  for (const letter of letters) left.set(letter, (left.get(letter) ?? 0) + 1);
  let turns = "";
  while (left.size > 0) {
    for (const [letter, count] of left) {
      turns += letter;
      if (count === 1) left.delete(letter);
      else left.set(letter, count - 1);
    }
  }
  return turns;
}

test("createQuickJSPool() on Node takes waiting runs in turns by requester, so one flooding the pool delays another's run by one run", async () => {
  const letters = "AAAAAAAABB--XY";
  const held = await heldPool(letters);
  try {
    const order = answerOrder(held.waits, letters);
    held.letGo();
    const answered = await order;
    assert.equal(answered, inTurns(letters, answered));
    // First come, first served would answer all of A's before B's.
    assert.ok(answered.indexOf("B") <= 4, answered);
  } finally {
    await held.dispose();
  }
});

test("createQuickJSPool() on Node refuses a requester's run past maxQueuedPerRequester with SANDBOX_BUSY naming the bound, while other requesters' runs wait and run", async () => {
  const letters = "AAB-";
  const held = await heldPool(letters, { maxQueuedPerRequester: 2 });
  try {
    const refused = await held.pool.run({ source: "export default 9;" }, {
      requester: { tenantId: "A" },
    });
    const { code, message } = refused.ok ? {} : refused.error;
    assert.deepEqual({ code, message }, {
      code: "SANDBOX_BUSY",
      message:
        "The QuickJS pool has as many runs of this requester waiting for a runner as its maxQueuedPerRequester allows (2): retry once this requester's runs finish, or raise maxQueuedPerRequester",
    });
    const order = answerOrder(held.waits, letters);
    held.letGo();
    const answered = await order;
    assert.equal(answered, inTurns(letters, answered));
  } finally {
    await held.dispose();
  }
  await assert.rejects(
    () => createQuickJSPool({ catalog, maxQueuedPerRequester: 2.5 }),
    {
      name: "RangeError",
      message:
        "Cannot create the QuickJS pool: maxQueuedPerRequester must be an integer from 0 to 1000000000",
    },
  );
});
