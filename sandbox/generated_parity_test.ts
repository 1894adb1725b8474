import assert from "node:assert/strict";
import { EMPTY_CATALOG } from "../catalog/mod.ts";
import { createQuickJSLoader } from "../loader/mod.ts";
import { operatorText } from "../protocol/operator_text.ts";
import { runFailures } from "../protocol/run_result.ts";
import type { LogEntry, SandboxResult } from "../protocol/mod.ts";
import { createVmSandbox } from "../vm/vm_sandbox.ts";
import {
  type GeneratedGuest,
  generatedGuest,
  generatedLogBoundGuest,
  generatedModuleGuest,
} from "./_generated_guests_test.ts";
import { createProcessSandbox } from "./process_sandbox.ts";
import type { SandboxRunOptions } from "./types.ts";
import { createWorkerSandbox } from "./worker_sandbox.ts";

// A fixed seed: a failure names the program, and the same program comes
// back on every run until the generator changes.
const SEED = 20261206;
const TIMEOUT_MS = 10_000;

/** What the tiers must agree on: all of a result but its metrics. */
type Outcome =
  | { ok: true; value: unknown; logs: LogEntry[]; logsTruncated: boolean }
  | {
    ok: false;
    code: string;
    name: string;
    message: string;
    logs: LogEntry[];
    logsTruncated: boolean;
  };

function outcomeOf(result: SandboxResult, logs = result.logs): Outcome {
  const rest = { logs: [...logs], logsTruncated: result.logsTruncated };
  if (result.ok) return { ok: true, value: result.value, ...rest };
  const { code, name, message } = result.error;
  return { ok: false, code, name, message, ...rest };
}

/**
 * What a vm call of the same function answers, as docs/vm.md says: names,
 * messages and console lines pass through operatorText().
 */
function asVmAnswers(outcome: Outcome): Outcome {
  const logs = outcome.logs.map(({ level, message }) => ({
    level,
    message: operatorText(message),
  }));
  if (outcome.ok) return { ...outcome, logs };
  const name = operatorText(outcome.name);
  return { ...outcome, name, message: operatorText(outcome.message), logs };
}

interface Runner extends AsyncDisposable {
  name: string;
  run(source: string, options: SandboxRunOptions): Promise<SandboxResult>;
}

async function createRunTiers(): Promise<Runner[]> {
  const loader = await createQuickJSLoader({ catalog: EMPTY_CATALOG });
  const worker = createWorkerSandbox({ pool: 1 });
  const process = createProcessSandbox();
  return [
    {
      name: "quickjs",
      run: (source, options) => loader.run(source, options),
      [Symbol.asyncDispose]: () => Promise.resolve(loader[Symbol.dispose]()),
    },
    {
      name: "worker",
      run: (source, options) => worker.run(source, options),
      [Symbol.asyncDispose]: () => worker[Symbol.asyncDispose](),
    },
    {
      name: "process",
      run: (source, options) => process.run(source, options),
      [Symbol.asyncDispose]: () => process[Symbol.asyncDispose](),
    },
  ];
}

function moduleOf(guest: GeneratedGuest): string {
  return guest.module ??
    `export default async function (c) {\n${guest.body}\n}`;
}

async function runOnEveryTier(
  runners: Runner[],
  guest: GeneratedGuest,
): Promise<Outcome> {
  const options: SandboxRunOptions = { timeoutMs: TIMEOUT_MS };
  if (guest.maxLogBytes !== undefined) options.maxLogBytes = guest.maxLogBytes;
  const [first, ...others] = await Promise.all(
    runners.map(async (runner) =>
      outcomeOf(await runner.run(moduleOf(guest), options))
    ),
  );
  others.forEach((other, index) =>
    assert.deepEqual(
      other,
      first,
      `program ${guest.id} on ${runners[index + 1]!.name}:\n${moduleOf(guest)}`,
    )
  );
  return first!;
}

async function withRunTiers(
  check: (runners: Runner[]) => Promise<void>,
): Promise<void> {
  const runners = await createRunTiers();
  try {
    await check(runners);
  } finally {
    await Promise.all(runners.map((runner) => runner[Symbol.asyncDispose]()));
  }
}

Deno.test("every tier, the vm tier too, gives each of 100 generated guests the same answer", async () => {
  const guests = Array.from(
    { length: 150 },
    (_, id) => generatedGuest(SEED, id),
  );
  const vmLogs: LogEntry[] = [];
  await using vm = createVmSandbox({
    pluginId: "generated",
    pluginModule: {
      kind: "source",
      identifier: "generated.js",
      source: guests
        .map((guest) =>
          `export async function p${guest.id}(c) {\n${guest.body}\n}`
        )
        .join("\n"),
    },
    limits: { timeoutMs: TIMEOUT_MS },
    onLog: ({ level, message }) => vmLogs.push({ level, message }),
  });
  const seen = { ok: 0, thrown: 0, refused: 0, truncated: 0, logged: 0 };
  await withRunTiers(async (runners) => {
    for (const guest of guests) {
      const answer = await runOnEveryTier(runners, guest);
      vmLogs.length = 0;
      // The answer waits for onLog to get the lines logged before it.
      const called = await vm.invoke(`p${guest.id}`, null);
      const vmAnswer = outcomeOf(called, vmLogs);
      // The vm tier bounds no console lines (docs/vm.md).
      const want = answer.logsTruncated
        ? { ...asVmAnswers(answer), logs: vmAnswer.logs, logsTruncated: false }
        : asVmAnswers(answer);
      assert.deepEqual(vmAnswer, want, `program ${guest.id} on vm`);
      if (answer.ok) seen.ok++;
      else if (answer.code === "GUEST_ERROR") seen.thrown++;
      else if (answer.code === "RESULT_NOT_SERIALIZABLE") seen.refused++;
      if (answer.logsTruncated) seen.truncated++;
      if (answer.logs.length > 0) seen.logged++;
    }
  });
  // The set still reaches every kind of answer, so the comparison is not
  // of empty answers.
  for (const [kind, count] of Object.entries(seen)) {
    assert.ok(count >= 3, `${kind}: ${count} of 100`);
  }
});

Deno.test("every run tier keeps and drops the same console lines of 60 generated guests near their maxLogBytes", async () => {
  let truncated = 0;
  await withRunTiers(async (runners) => {
    for (let id = 0; id < 60; id++) {
      const answer = await runOnEveryTier(
        runners,
        generatedLogBoundGuest(SEED, id),
      );
      if (answer.logsTruncated) truncated++;
    }
  });
  assert.ok(truncated >= 10 && truncated <= 58, `${truncated} truncated`);
});

Deno.test("every run tier gives each of 40 generated guest modules with top-level code the same answer", async () => {
  let failed = 0;
  await withRunTiers(async (runners) => {
    for (let id = 0; id < 40; id++) {
      const answer = await runOnEveryTier(
        runners,
        generatedModuleGuest(SEED, id),
      );
      if (!answer.ok) failed++;
    }
  });
  assert.ok(failed >= 5 && failed <= 35, `${failed} failed`);
});

// Each kind of import the scan refuses; the packs exist among the fixture
// packs, but these tiers take none.
const IMPORTS = [
  'import { add } from "@cordon-fixtures/math";',
  'import * as trig from "@cordon-fixtures/math/trig";',
  'import { greet } from "greet/extra";',
  'import { round } from "@cordon-fixtures/math/lib/round.js";',
  'import "@cordon-fixtures/math/../clock";',
  'import fs from "node:fs";',
  'import fs from "fs";',
  'import local from "./local.js";',
  'import pad from "npm:left-pad";',
  'import data from "greet" with { type: "json" };',
  'const m = await import("greet");',
  'const name = "greet"; const m = await import(name);',
  'export * from "@cordon-fixtures/clock";',
];

Deno.test("the run tiers refuse each import with the QuickJS tier's code, name and message, but an undeclared pack's message, which says to run on the QuickJS tier", async () => {
  await withRunTiers(async ([quickjs, ...others]) => {
    for (const line of IMPORTS) {
      const source = `${line}\nexport default 1;`;
      const want = outcomeOf(await quickjs!.run(source, {}));
      assert.equal(want.ok, false, line);
      for (const runner of others) {
        const got = outcomeOf(await runner.run(source, {}));
        if (!want.ok && want.code === "IMPORT_UNDECLARED") {
          assert.ok(!got.ok, line);
          assert.match(
            got.message,
            /: this sandbox runs guest code without packs, so no pack is declared; run it on the QuickJS tier with "[^"]+" in the declaration's packages$/,
            `${line} on ${runner.name}`,
          );
          assert.deepEqual({ ...got, message: "" }, { ...want, message: "" });
        } else {
          assert.deepEqual(got, want, `${line} on ${runner.name}`);
        }
      }
    }
  });
});

Deno.test("an answer at 4 MiB is returned and one byte more is refused on every tier, by maxPayloadBytes on the vm tier and maxResultBytes on the others", async () => {
  // 4 MiB of JSON text with its quotes, then one byte more.
  const atBound = 'export default "é".repeat(2097151);';
  const overBound = 'export default "é".repeat(2097151) + "x";';
  await using vm = createVmSandbox({
    pluginId: "bounds",
    pluginModule: {
      kind: "source",
      identifier: "bounds.js",
      source: [atBound, overBound]
        .map((line, i) =>
          line.replace("export default", `export const p${i} = () =>`)
        )
        .join("\n"),
    },
  });
  const atVm = await vm.invoke("p0");
  const overVm = await vm.invoke("p1");
  assert.equal(atVm.ok && (atVm.value as string).length, 2097151);
  assert.deepEqual(!overVm.ok && overVm.error, {
    code: "RESULT_NOT_SERIALIZABLE",
    name: "RangeError",
    message:
      "The plugin's answer is larger than 4194304 bytes: return less data or raise limits.maxPayloadBytes",
  });
  await withRunTiers(async (runners) => {
    for (const runner of runners) {
      const at = await runner.run(atBound, {});
      assert.equal(at.ok && (at.value as string).length, 2097151, runner.name);
      const over = await runner.run(overBound, {});
      assert.deepEqual(
        !over.ok && over.error,
        runFailures.resultTooLarge(4 * 1024 * 1024),
        runner.name,
      );
    }
  });
});
