// The hostile guest table (fixtures/hostile_guests.ts) on Node, on the
// Node build's in-thread loader and on its pool's worker_threads runners
// (`deno task build:node` writes the build and the table to dist/node/),
// as sandbox/hostile_guest_table_test.ts runs it in Deno and
// e2e/hostile.spec.ts in Chromium: one test per case and runner, with the
// answers the table gives the tiers "node:loader" and "node:pool" (a case
// a runner cannot hold says why in the table and is not declared), and a
// probe after each case that shows the next run sees nothing of it. While
// a guest on the pool runs out its time, a timer of this thread must keep
// firing; a runner the pool terminated must be replaced by one that answers.

import assert from "node:assert/strict";
import process from "node:process";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import {
  assertNothingLeftRunning,
  HAS_PROC,
} from "../../vm/node_test/leak_probe.mjs";
import {
  checkHostileGuest,
  createQuickJSLoader,
  createQuickJSPool,
  EMPTY_CATALOG,
  expectationsOf,
  HOSTILE_GUESTS,
  HOSTILE_LIMITS,
  RUNNER_URL,
} from "./_node_pool.mjs";

/** A case the pool ends only by terminating its runner: one long built-in call. */
const KILLED_CASE = "one long built-in call over a huge array-like";
/** A case that answers at once, to show both runners answer after a kill. */
const QUICK_CASE = "throw null";

/** The period of the interval that shows this thread's event loop turns. */
const TICK_MS = 10;

/** Put in this process's environment; no answer may carry it. */
const SECRET = `hostile-secret-${crypto.randomUUID()}`;
process.env.CORDON_HOSTILE_SECRET = SECRET;

const HOST = {
  root: fileURLToPath(new URL("../../", import.meta.url)),
  forbidden: [SECRET, process.execPath],
  randoms: new Set(),
};

/** Both runners are made with the table's limits and no packs. */
const QUICKJS = {
  catalog: EMPTY_CATALOG,
  memoryLimitBytes: HOSTILE_LIMITS.quickjsMemoryBytes,
};

function guestNamed(name) {
  const guest = HOSTILE_GUESTS.find((entry) => entry.name === name);
  assert.ok(guest !== undefined, `no hostile guest is named ${name}`);
  return guest;
}

/** Runs one case and the probe after it; returns how often the interval fired. */
async function check(runner, tier, guest) {
  let ticks = 0;
  const interval = setInterval(() => ticks++, TICK_MS);
  try {
    const report = await checkHostileGuest(runner, tier, guest, HOST);
    assert.equal(
      report.problem,
      null,
      `${guest.name} [${tier}]: ${report.problem}; expected ${
        JSON.stringify(report.expected)
      }, got ${JSON.stringify(report.actual)}`,
    );
    return ticks;
  } finally {
    clearInterval(interval);
  }
}

function endsByTimeout(guest, tier) {
  return expectationsOf(guest, tier).some((answer) =>
    !answer.ok && answer.code === "TIMEOUT"
  );
}

describe("the hostile guest table on the Node build's in-thread loader", () => {
  let loader;
  before(async () => {
    loader = await createQuickJSLoader(QUICKJS);
  });
  after(() => loader[Symbol.dispose]());

  for (const guest of HOSTILE_GUESTS) {
    // A case the loader cannot run says why in the table.
    if (expectationsOf(guest, "node:loader").length === 0) continue;
    test(guest.name, async () => {
      await check(loader, "node:loader", guest);
    });
  }
});

describe("the hostile guest table on the Node build's pool of worker_threads runners", () => {
  let pool;
  before(async () => {
    // Two runners, as in Deno and Chromium: the probe after a killed run
    // need not wait for its replacement.
    pool = await createQuickJSPool({
      ...QUICKJS,
      size: 2,
      isolation: "worker",
      runnerUrl: RUNNER_URL,
    });
  });
  after(async () => {
    await pool[Symbol.asyncDispose]();
    // Once the pool is disposed no guest goes on on one of its threads.
    if (HAS_PROC) await assertNothingLeftRunning("the pool on Node");
  });

  for (const guest of HOSTILE_GUESTS) {
    if (expectationsOf(guest, "node:pool").length === 0) continue;
    test(guest.name, async () => {
      const ticks = await check(pool, "node:pool", guest);
      // A guest that runs out its time runs it out off this thread.
      if (endsByTimeout(guest, "node:pool")) {
        assert.ok(ticks > 0, "this thread's timer never fired");
      }
    });
  }

  test("a runner terminated in a long built-in call is replaced by one that answers", async () => {
    const before = pool.replacements;
    const ticks = await check(pool, "node:pool", guestNamed(KILLED_CASE));
    assert.ok(pool.replacements > before, "no runner was replaced");
    assert.ok(ticks > 0, "this thread's timer never fired");
    // As many runs at once as the pool has runners: the replacement answers too.
    const quick = guestNamed(QUICK_CASE);
    await Promise.all([1, 2].map(() => check(pool, "node:pool", quick)));
  });
});
