import assert from "node:assert/strict";
import { EMPTY_CATALOG } from "../catalog/mod.ts";
import { createQuickJSLoader, createQuickJSPool } from "../loader/mod.ts";
import type { SandboxResult } from "../protocol/mod.ts";
import { DEFAULT_RUN_INPUT_BOUNDS } from "../protocol/run_inputs.ts";
import { MAX_RESULT_JSON_CHARS, runFailures } from "../protocol/run_result.ts";
import { createProcessSandbox } from "./process_sandbox.ts";
import type { SandboxRunOptions } from "./types.ts";
import { createWorkerSandbox } from "./worker_sandbox.ts";

/** A tier that takes a declaration, behind one shape. */
interface Runner extends AsyncDisposable {
  name: string;
  run(source: string, options?: SandboxRunOptions): Promise<SandboxResult>;
}

interface Bounds {
  maxSourceBytes?: number;
  maxContextBytes?: number;
  maxResultBytes?: number;
}

async function createRunners(bounds: Bounds): Promise<Runner[]> {
  const loader = await createQuickJSLoader({
    catalog: EMPTY_CATALOG,
    ...bounds,
  });
  const pool = await createQuickJSPool({
    catalog: EMPTY_CATALOG,
    size: 1,
    ...bounds,
  });
  const worker = createWorkerSandbox(bounds);
  const process = createProcessSandbox(bounds);
  return [
    {
      name: "QuickJS loader",
      run: (source, options) => loader.run(source, options),
      [Symbol.asyncDispose]: () => Promise.resolve(loader[Symbol.dispose]()),
    },
    {
      name: "QuickJS pool",
      run: (source, options) => pool.run(source, options),
      [Symbol.asyncDispose]: () => pool[Symbol.asyncDispose](),
    },
    {
      name: "worker sandbox",
      run: (source, options) => worker.run(source, options),
      [Symbol.asyncDispose]: () => worker[Symbol.asyncDispose](),
    },
    {
      name: "process sandbox",
      run: (source, options) => process.run(source, options),
      [Symbol.asyncDispose]: () => process[Symbol.asyncDispose](),
    },
  ];
}

async function disposeAll(runners: Runner[]): Promise<void> {
  await Promise.all(runners.map((runner) => runner[Symbol.asyncDispose]()));
}

function answer(result: SandboxResult): unknown {
  return result.ok ? result.value : result.error;
}

const encoder = new TextEncoder();

/** A guest source of exactly `bytes` bytes of UTF-8, one of them a two-byte character. */
function sourceOf(bytes: number): string {
  const code = 'export default "é";';
  return code + " ".repeat(bytes - encoder.encode(code).length);
}

/** A context whose JSON text is exactly `bytes` bytes of UTF-8. */
function contextOf(bytes: number): { a: string } {
  // {"a":"é"} is 10 bytes.
  return { a: `é${"x".repeat(bytes - 10)}` };
}

const GUEST = "export default (context) => context.a.length;";

Deno.test("every tier runs a source and a context at their bounds and refuses one byte more with the same DECLARATION_INVALID", async () => {
  const runners = await createRunners({
    maxSourceBytes: 64,
    maxContextBytes: 32,
  });
  try {
    for (const runner of runners) {
      assert.equal(encoder.encode(sourceOf(65)).length, 65);
      // 64 characters, 65 bytes: only the UTF-8 count refuses it.
      assert.equal(sourceOf(65).length, 64);
      assert.equal(answer(await runner.run(sourceOf(64))), "é", runner.name);
      assert.deepEqual(answer(await runner.run(sourceOf(65))), {
        code: "DECLARATION_INVALID",
        name: "DeclarationError",
        message:
          "The declaration is invalid at source: it holds at least 65 bytes of UTF-8, more than maxSourceBytes (64); split the code into packs, or raise maxSourceBytes",
      }, runner.name);

      assert.equal(JSON.stringify(contextOf(33)).length, 32);
      assert.equal(
        answer(await runner.run(GUEST, { context: contextOf(32) })),
        23,
        runner.name,
      );
      assert.deepEqual(
        answer(await runner.run(GUEST, { context: contextOf(33) })),
        {
          code: "DECLARATION_INVALID",
          name: "DeclarationError",
          message:
            "The run's context is too large: its JSON text holds at least 33 bytes of UTF-8, more than maxContextBytes (32); pass less data, or raise maxContextBytes",
        },
        runner.name,
      );
    }
  } finally {
    await disposeAll(runners);
  }
});

Deno.test("every tier takes a run's own maxSourceBytes and maxContextBytes over its sandbox's", async () => {
  const runners = await createRunners({
    maxSourceBytes: 0,
    maxContextBytes: 0,
  });
  try {
    for (const runner of runners) {
      const refused = await runner.run(GUEST, { context: contextOf(32) });
      assert.equal(refused.ok ? "" : refused.error.code, "DECLARATION_INVALID");
      const ran = await runner.run(GUEST, {
        context: contextOf(32),
        maxSourceBytes: 1024,
        maxContextBytes: 32,
      });
      assert.equal(answer(ran), 23, runner.name);
    }
  } finally {
    await disposeAll(runners);
  }
});

Deno.test("every tier refuses a source one byte past the default maxSourceBytes before any work on it", async () => {
  const runners = await createRunners({});
  const bound = DEFAULT_RUN_INPUT_BOUNDS.maxSourceBytes;
  const source = `/*${"x".repeat(bound - 4)}*/ `;
  try {
    for (const runner of runners) {
      const result = await runner.run(source);
      assert.equal(result.ok, false, runner.name);
      assert.equal(
        result.ok ? "" : result.error.message,
        `The declaration is invalid at source: it holds at least ${
          bound + 1
        } bytes of UTF-8, more than maxSourceBytes (${bound}); split the code into packs, or raise maxSourceBytes`,
      );
      const context = await runner.run(GUEST, {
        context: { a: "x".repeat(DEFAULT_RUN_INPUT_BOUNDS.maxContextBytes) },
      });
      assert.equal(
        context.ok ? "" : context.error.code,
        "DECLARATION_INVALID",
        runner.name,
      );
    }
  } finally {
    await disposeAll(runners);
  }
});

Deno.test("every tier checks maxSourceBytes and maxContextBytes as it checks its other limits", async () => {
  const runners = await createRunners({});
  try {
    for (const runner of runners) {
      await assert.rejects(
        () => runner.run(GUEST, { maxSourceBytes: -1 }),
        RangeError,
        runner.name,
      );
      await assert.rejects(
        () => runner.run(GUEST, { maxContextBytes: "1" as never }),
        TypeError,
        runner.name,
      );
    }
  } finally {
    await disposeAll(runners);
  }
  await assert.rejects(
    () => createQuickJSLoader({ catalog: EMPTY_CATALOG, maxSourceBytes: 0.5 }),
    /maxSourceBytes must be an integer from 0 to 1073741824 bytes/,
  );
  await assert.rejects(
    () => createQuickJSPool({ catalog: EMPTY_CATALOG, maxContextBytes: -1 }),
    RangeError,
  );
  assert.throws(() => createWorkerSandbox({ maxSourceBytes: -1 }), RangeError);
  assert.throws(
    () => createProcessSandbox({ maxContextBytes: "1" as never }),
    TypeError,
  );
});

/**
 * A guest whose value's JSON text is exactly `bytes` bytes of UTF-8, one
 * character fewer: "é" takes two.
 */
function resultOf(bytes: number): string {
  return `export default "é${"x".repeat(bytes - 4)}";`;
}

Deno.test("every tier answers a value whose JSON text is at maxResultBytes and refuses one byte more with the same RESULT_NOT_SERIALIZABLE", async () => {
  const runners = await createRunners({ maxResultBytes: 32 });
  const refusal = runFailures.resultTooLarge(32);
  try {
    for (const runner of runners) {
      assert.equal(
        answer(await runner.run(resultOf(32))),
        `é${"x".repeat(28)}`,
      );
      // 32 characters, 33 bytes: only the caller's UTF-8 count refuses it.
      assert.deepEqual(
        answer(await runner.run(resultOf(33))),
        refusal,
        runner.name,
      );
      // 33 characters: the guest stops writing it.
      assert.deepEqual(
        answer(await runner.run(`export default "${"x".repeat(31)}";`)),
        refusal,
        runner.name,
      );
      assert.deepEqual(
        answer(
          await runner.run(
            "export default [1234567890, 1234567890, 123456789];",
          ),
        ),
        refusal,
        runner.name,
      );
      assert.deepEqual(
        answer(
          await runner.run(
            "export default [1234567890, 1234567890, 12345678];",
          ),
        ),
        [1234567890, 1234567890, 12345678],
        runner.name,
      );
    }
  } finally {
    await disposeAll(runners);
  }
  assert.match(refusal.message, /maxResultBytes \(32\)/);
  assert.match(refusal.message, /raise maxResultBytes/);
});

Deno.test("every tier takes a run's own maxResultBytes over its sandbox's", async () => {
  const runners = await createRunners({ maxResultBytes: 0 });
  try {
    for (const runner of runners) {
      assert.deepEqual(
        answer(await runner.run("export default 1;")),
        runFailures.resultTooLarge(0),
        runner.name,
      );
      const ran = await runner.run(resultOf(40), { maxResultBytes: 40 });
      assert.equal(answer(ran), `é${"x".repeat(36)}`, runner.name);
    }
  } finally {
    await disposeAll(runners);
  }
});

Deno.test("every tier refuses alike an answer that repeats one string past the default maxResultBytes, counting each time it appears", async () => {
  // 127 MiB of text from one 1 MiB string: the worker tier answered
  // OUT_OF_MEMORY where the others wrote and parsed the whole text.
  const runners = await createRunners({});
  const sources = [
    'const s = "x".repeat(2 ** 20); export default Array(127).fill(s);',
    'let a = "x".repeat(1000); for (let i = 0; i < 17; i++) a = [a, a]; export default a;',
  ];
  try {
    for (const runner of runners) {
      for (const source of sources) {
        assert.deepEqual(
          answer(await runner.run(source, { timeoutMs: 30_000 })),
          runFailures.resultTooLarge(DEFAULT_RUN_INPUT_BOUNDS.maxResultBytes),
          `${runner.name}: ${source}`,
        );
      }
    }
  } finally {
    await disposeAll(runners);
  }
});

Deno.test("every tier checks maxResultBytes as it checks its other bounds", async () => {
  const runners = await createRunners({});
  try {
    for (const runner of runners) {
      await assert.rejects(
        () => runner.run(GUEST, { maxResultBytes: -1 }),
        RangeError,
        runner.name,
      );
      await assert.rejects(
        () => runner.run(GUEST, { maxResultBytes: "1" as never }),
        TypeError,
        runner.name,
      );
      await assert.rejects(
        () => runner.run(GUEST, { maxResultBytes: MAX_RESULT_JSON_CHARS + 1 }),
        /maxResultBytes must be an integer from 0 to 134217728 bytes/,
        runner.name,
      );
    }
  } finally {
    await disposeAll(runners);
  }
  await assert.rejects(
    () => createQuickJSLoader({ catalog: EMPTY_CATALOG, maxResultBytes: 0.5 }),
    /maxResultBytes must be an integer from 0 to 134217728 bytes/,
  );
  await assert.rejects(
    () => createQuickJSPool({ catalog: EMPTY_CATALOG, maxResultBytes: -1 }),
    RangeError,
  );
  assert.throws(() => createWorkerSandbox({ maxResultBytes: -1 }), RangeError);
  assert.throws(
    () => createProcessSandbox({ maxResultBytes: "1" as never }),
    TypeError,
  );
});
