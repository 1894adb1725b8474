import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { EMPTY_CATALOG } from "../catalog/mod.ts";
import {
  checkHostileGuest,
  HOSTILE_GUESTS,
  HOSTILE_LIMITS,
  type HostileHost,
  type HostileRunner,
  type HostileTier,
  IN_THREAD_TIERS,
} from "../fixtures/mod.ts";
import { createQuickJSLoader, createQuickJSPool } from "../loader/mod.ts";
import { createProcessSandbox } from "./process_sandbox.ts";
import { createWorkerSandbox } from "./worker_sandbox.ts";
import { withLag } from "./_lag_test.ts";
import {
  assertNothingLeftRunning,
  HAS_PROC,
} from "../vm/node_test/leak_probe.mjs";

// The hostile guest table (fixtures/hostile_guests.ts) on every Deno tier;
// e2e/hostile.spec.ts runs it in Chromium. After every case, on the same
// loader, pool or sandbox, the next run answers right and sees nothing of
// the hostile one, and no message or log line carries a host path, a host
// stack or the host's secret. On the tiers that run guests off the caller's
// thread, the caller's event loop must also keep turning (a generous bound,
// a sanity check and not a timing assertion).

/** The longest the caller's event loop may stop turning during a case. */
const LAG_BOUND_MS = 1500;

/**
 * The tiers a guest runs on, in Deno. The pool's Web Worker runners are
 * refused in Deno (their `terminate()` cannot stop a long built-in call);
 * browsers run them through e2e/hostile.spec.ts.
 */
const TIERS: readonly HostileTier[] = [
  "loader",
  "pool:process",
  "pool:in-thread",
  "worker",
  "process",
];

/** Put in the caller's environment; no answer may carry it. */
const SECRET = `hostile-secret-${crypto.randomUUID()}`;

const HOST: HostileHost = {
  root: fileURLToPath(new URL("../", import.meta.url)),
  forbidden: [SECRET, Deno.execPath()],
  randoms: new Set(),
};

type Runs = HostileRunner & AsyncDisposable;

async function createTier(tier: HostileTier): Promise<Runs> {
  const quickjs = {
    catalog: EMPTY_CATALOG,
    memoryLimitBytes: HOSTILE_LIMITS.quickjsMemoryBytes,
  };
  switch (tier) {
    case "loader": {
      const loader = await createQuickJSLoader(quickjs);
      return {
        run: (source, options) => loader.run(source, options),
        [Symbol.asyncDispose]: () => {
          loader[Symbol.dispose]();
          return Promise.resolve();
        },
      };
    }
    case "pool:process":
    case "pool:in-thread": {
      const isolation = tier.slice("pool:".length) as "process" | "in-thread";
      // Two runners: the probe after a killed run need not wait for its
      // replacement, which later cases meet in turn.
      return await createQuickJSPool({ ...quickjs, size: 2, isolation });
    }
    case "worker":
      return createWorkerSandbox({
        pool: 2,
        concurrency: 2,
        memoryLimitBytes: HOSTILE_LIMITS.v8MemoryBytes,
      });
    case "process":
      return createProcessSandbox({
        concurrency: 1,
        memoryLimitBytes: HOSTILE_LIMITS.v8MemoryBytes,
      });
    default:
      throw new RangeError(`Cannot run the table on ${tier} in Deno`);
  }
}

/** Runs every case on every tier, a case at a time; returns what went wrong. */
async function sweep(tiers: readonly HostileTier[]): Promise<string[]> {
  const all = await Promise.all(
    tiers.map(async (tier) => ({ tier, runs: await createTier(tier) })),
  );
  const failures: string[] = [];
  try {
    for (const guest of HOSTILE_GUESTS) {
      await Promise.all(all.map(async ({ tier, runs }) => {
        const { result: report, lagMs } = await withLag(() =>
          checkHostileGuest(runs, tier, guest, HOST)
        );
        const where = `${guest.name} [${tier}]`;
        if (report.problem !== null) {
          failures.push(`${where}: ${report.problem}`);
        } else if (!IN_THREAD_TIERS.includes(tier) && lagMs >= LAG_BOUND_MS) {
          failures.push(
            `${where}: the caller's event loop stalled for ${lagMs} ms`,
          );
        }
      }));
    }
  } finally {
    await Promise.all(all.map(({ runs }) => runs[Symbol.asyncDispose]()));
  }
  return failures;
}

Deno.env.set("CORDON_HOSTILE_SECRET", SECRET);

Deno.test("every hostile guest gets its one outcome on the in-thread QuickJS tiers, and the next run sees nothing of it", async () => {
  const failures = await sweep(
    TIERS.filter((tier) => IN_THREAD_TIERS.includes(tier)),
  );
  assert.deepEqual(failures, []);
});

Deno.test("every hostile guest gets its one outcome off the caller's thread, without stalling it, and the next run sees nothing of it", async () => {
  const failures = await sweep(
    TIERS.filter((tier) => !IN_THREAD_TIERS.includes(tier)),
  );
  assert.deepEqual(failures, []);
  // Once every tier is disposed no guest goes on in the background. Linux's
  // /proc is where this is read; CI runs there.
  if (HAS_PROC) await assertNothingLeftRunning("the hostile guest table");
});
