import assert from "node:assert/strict";
import { EMPTY_CATALOG } from "../catalog/mod.ts";
import {
  malformedDeclarations,
  runMalformedDeclaration,
} from "../fixtures/malformed_declarations.ts";
import { createQuickJSLoader, createQuickJSPool } from "../loader/mod.ts";
import type { SandboxResult } from "../protocol/mod.ts";
import { createProcessSandbox } from "./process_sandbox.ts";
import type { SandboxRunOptions } from "./types.ts";
import { createWorkerSandbox } from "./worker_sandbox.ts";

/** A tier that takes a declaration, behind one shape. */
interface DeclarationRunner extends AsyncDisposable {
  name: string;
  run(
    declaration: unknown,
    options?: SandboxRunOptions,
  ): Promise<SandboxResult>;
}

async function createRunners(): Promise<DeclarationRunner[]> {
  const loader = await createQuickJSLoader({ catalog: EMPTY_CATALOG });
  const pool = await createQuickJSPool({ catalog: EMPTY_CATALOG, size: 1 });
  const worker = createWorkerSandbox({ pool: 1 });
  const process = createProcessSandbox();
  return [
    {
      name: "QuickJS loader",
      run: (declaration, options) => loader.run(declaration as never, options),
      [Symbol.asyncDispose]: () => Promise.resolve(loader[Symbol.dispose]()),
    },
    {
      name: "QuickJS pool",
      run: (declaration, options) => pool.run(declaration as never, options),
      [Symbol.asyncDispose]: () => pool[Symbol.asyncDispose](),
    },
    {
      name: "worker sandbox",
      run: (declaration, options) => worker.run(declaration as never, options),
      [Symbol.asyncDispose]: () => worker[Symbol.asyncDispose](),
    },
    {
      name: "process sandbox",
      run: (declaration, options) => process.run(declaration as never, options),
      [Symbol.asyncDispose]: () => process[Symbol.asyncDispose](),
    },
  ];
}

Deno.test("every tier answers each malformed declaration with DECLARATION_INVALID and the same message, reading it once, and runs code after it", async (t) => {
  const runners = await createRunners();
  try {
    for (const row of malformedDeclarations()) {
      await t.step(row.name, async () => {
        for (const runner of runners) {
          const report = await runMalformedDeclaration(runner, row);
          assert.deepEqual(report.actual, {
            code: "DECLARATION_INVALID",
            name: "DeclarationError",
            message: row.message,
          }, runner.name);
          assert.ok(
            report.reads <= row.reads,
            `${runner.name} read it ${report.reads} times, at most ${row.reads}`,
          );
          assert.deepEqual(report.after, { ok: true, value: 7 }, runner.name);
        }
      });
    }
  } finally {
    await Promise.all(runners.map((runner) => runner[Symbol.asyncDispose]()));
  }
});

Deno.test("every tier still rejects a wrong option with a TypeError, whatever the declaration", async () => {
  const runners = await createRunners();
  try {
    for (const runner of runners) {
      for (const declaration of [{ source: 1 }, "export default 1;"]) {
        await assert.rejects(
          () =>
            runner.run(declaration, {
              timeoutMs: "soon" as unknown as number,
            }),
          TypeError,
          runner.name,
        );
      }
    }
  } finally {
    await Promise.all(runners.map((runner) => runner[Symbol.asyncDispose]()));
  }
});
