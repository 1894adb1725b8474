// The bounds on a run's inputs and answer (maxSourceBytes, maxContextBytes,
// maxResultBytes) and the answer to a context too large for the run's memory
// to parse, on the Node build's QuickJS loader and pool, with the answers the
// Deno tests pin.

import assert from "node:assert/strict";
import { test } from "node:test";
import {
  createQuickJSLoader,
  createQuickJSPool,
  EMPTY_CATALOG as catalog,
  RUNNER_URL,
} from "./_node_pool.mjs";

const MiB = 1024 * 1024;
const encoder = new TextEncoder();

/** The Node build's loader and a pool of one runner, both made with `options`. */
async function withRunners(options, use) {
  const loader = await createQuickJSLoader({ ...options, catalog });
  const pool = await createQuickJSPool({
    ...options,
    catalog,
    size: 1,
    runnerUrl: RUNNER_URL,
  });
  try {
    await use({ loader, pool });
  } finally {
    loader[Symbol.dispose]();
    await pool[Symbol.asyncDispose]();
  }
}

function answer(result) {
  return result.ok ? result.value : result.error;
}

/** A guest source of exactly `bytes` bytes of UTF-8, one of them a two-byte character. */
function sourceOf(bytes) {
  const code = 'export default "é";';
  return code + " ".repeat(bytes - encoder.encode(code).length);
}

/** A context whose JSON text is exactly `bytes` bytes of UTF-8. */
function contextOf(bytes) {
  // {"a":"é"} is 10 bytes.
  return { a: `é${"x".repeat(bytes - 10)}` };
}

const GUEST = "export default (context) => context.a.length;";

test("the loader and the pool on Node run a source and a context at their bounds and refuse one byte more with DECLARATION_INVALID", async () => {
  await withRunners(
    { maxSourceBytes: 64, maxContextBytes: 32 },
    async (runners) => {
      for (const [name, runner] of Object.entries(runners)) {
        // 64 characters, 65 bytes: only the UTF-8 count refuses it.
        assert.equal(sourceOf(65).length, 64);
        assert.equal(answer(await runner.run(sourceOf(64))), "é", name);
        assert.deepEqual(answer(await runner.run(sourceOf(65))), {
          code: "DECLARATION_INVALID",
          name: "DeclarationError",
          message:
            "The declaration is invalid at source: it holds at least 65 bytes of UTF-8, more than maxSourceBytes (64); split the code into packs, or raise maxSourceBytes",
        }, name);
        assert.equal(
          answer(await runner.run(GUEST, { context: contextOf(32) })),
          23,
          name,
        );
        assert.deepEqual(
          answer(await runner.run(GUEST, { context: contextOf(33) })),
          {
            code: "DECLARATION_INVALID",
            name: "DeclarationError",
            message:
              "The run's context is too large: its JSON text holds at least 33 bytes of UTF-8, more than maxContextBytes (32); pass less data, or raise maxContextBytes",
          },
          name,
        );
        // A run's own bounds come before its runner's.
        const raised = await runner.run(GUEST, {
          context: contextOf(40),
          maxContextBytes: 40,
        });
        assert.equal(answer(raised), 31, name);
        await assert.rejects(
          () => runner.run(GUEST, { maxSourceBytes: -1 }),
          RangeError,
          name,
        );
      }
    },
  );
});

test("the loader and the pool on Node refuse a source one byte past the default maxSourceBytes, and a context past the default maxContextBytes", async () => {
  await withRunners({}, async (runners) => {
    const bound = 4 * MiB;
    const source = `/*${"x".repeat(bound - 4)}*/ `;
    for (const [name, runner] of Object.entries(runners)) {
      const refused = await runner.run(source);
      assert.equal(
        refused.ok ? "" : refused.error.message,
        `The declaration is invalid at source: it holds at least ${
          bound + 1
        } bytes of UTF-8, more than maxSourceBytes (${bound}); split the code into packs, or raise maxSourceBytes`,
        name,
      );
      const context = await runner.run(GUEST, {
        context: { a: "x".repeat(bound) },
      });
      assert.equal(
        context.ok ? "" : context.error.code,
        "DECLARATION_INVALID",
        name,
      );
    }
  });
});

/** Arrays that each hold the next twice: text twice as long at each level. */
function doubled(levels) {
  let value = 1;
  for (let i = 0; i < levels; i++) value = [value, value];
  return value;
}

test("the loader and the pool on Node answer OUT_OF_MEMORY to a context too large for the run's memory to parse, and GUEST_ERROR to a thrown null", async () => {
  const limits = { memoryLimitBytes: 16 * MiB, timeoutMs: 10_000 };
  await withRunners({}, async (runners) => {
    for (const [name, runner] of Object.entries(runners)) {
      // 1 MiB of text, which outgrows 16 MiB as QuickJS parses it.
      const parsed = await runner.run(
        "export default (context) => context === null ? 0 : 1;",
        { ...limits, context: doubled(18), maxContextBytes: 64 * MiB },
      );
      assert.equal(parsed.ok ? "ok" : parsed.error.code, "OUT_OF_MEMORY", name);
      const thrown = await runner.run(
        "export default () => { throw null; };",
        limits,
      );
      assert.deepEqual(answer(thrown), {
        code: "GUEST_ERROR",
        name: "NonErrorThrown",
        message: "Guest code threw a non-Error value: null",
      }, name);
    }
  });
});

/** The refusal of an answer past `maxResultBytes`, as the Deno tests pin it. */
function resultTooLarge(maxResultBytes) {
  return {
    code: "RESULT_NOT_SERIALIZABLE",
    name: "RangeError",
    message:
      `Cannot return a value whose JSON text holds more than maxResultBytes (${maxResultBytes}) bytes of UTF-8 from a sandbox: return less data, or raise maxResultBytes`,
  };
}

/** A guest whose value's JSON text is exactly `bytes` bytes of UTF-8. */
function resultOf(bytes) {
  return `export default "é${"x".repeat(bytes - 4)}";`;
}

test("the loader and the pool on Node answer a value at maxResultBytes and refuse one byte more, and a string repeated past the default, with RESULT_NOT_SERIALIZABLE", async () => {
  await withRunners({ maxResultBytes: 32 }, async (runners) => {
    for (const [name, runner] of Object.entries(runners)) {
      assert.equal(
        answer(await runner.run(resultOf(32))),
        `é${"x".repeat(28)}`,
      );
      // 32 characters, 33 bytes: only the host's UTF-8 count refuses it.
      assert.deepEqual(
        answer(await runner.run(resultOf(33))),
        resultTooLarge(32),
        name,
      );
      const raised = await runner.run(resultOf(40), { maxResultBytes: 40 });
      assert.equal(answer(raised), `é${"x".repeat(36)}`, name);
      await assert.rejects(
        () => runner.run(GUEST, { maxResultBytes: -1 }),
        RangeError,
        name,
      );
    }
  });
  await withRunners({}, async (runners) => {
    for (const [name, runner] of Object.entries(runners)) {
      const shared = await runner.run(
        'const s = "x".repeat(2 ** 20); export default Array(127).fill(s);',
        { memoryLimitBytes: 512 * MiB, timeoutMs: 30_000 },
      );
      assert.deepEqual(answer(shared), resultTooLarge(4 * MiB), name);
    }
  });
});

// 64 copies of one 1 KiB string: 65,729 characters of JSON text, counted
// each time the string appears.
const SHARED = 'export default Array(64).fill("x".repeat(1024));';
const SHARED_BYTES = 64 * 1026 + 63 + 2;

test("the loader and the pool on Node answer a string repeated up to maxResultBytes and refuse it one byte under, counting each time it appears", async () => {
  await withRunners({ maxResultBytes: SHARED_BYTES }, async (runners) => {
    for (const [name, runner] of Object.entries(runners)) {
      const whole = answer(await runner.run(SHARED));
      assert.equal(JSON.stringify(whole).length, SHARED_BYTES, name);
      assert.deepEqual(
        answer(await runner.run(SHARED, { maxResultBytes: SHARED_BYTES - 1 })),
        resultTooLarge(SHARED_BYTES - 1),
        name,
      );
    }
  });
});

test("the loader and the pool on Node take a run's own maxResultBytes over their factory's", async () => {
  await withRunners({ maxResultBytes: 0 }, async (runners) => {
    for (const [name, runner] of Object.entries(runners)) {
      assert.deepEqual(
        answer(await runner.run("export default 1;")),
        resultTooLarge(0),
        name,
      );
      const ran = await runner.run(resultOf(40), { maxResultBytes: 40 });
      assert.equal(answer(ran), `é${"x".repeat(36)}`, name);
    }
  });
});

test("the loader and the pool on Node check maxResultBytes as they check their other bounds", async () => {
  await withRunners({}, async (runners) => {
    for (const [name, runner] of Object.entries(runners)) {
      await assert.rejects(
        () => runner.run(GUEST, { maxResultBytes: "1" }),
        TypeError,
        name,
      );
      await assert.rejects(
        () => runner.run(GUEST, { maxResultBytes: 2 ** 27 + 1 }),
        {
          name: "RangeError",
          message:
            /maxResultBytes must be an integer from 0 to 134217728 bytes/,
        },
        name,
      );
    }
  });
  await assert.rejects(
    () => createQuickJSLoader({ catalog, maxResultBytes: 0.5 }),
    /maxResultBytes must be an integer from 0 to 134217728 bytes/,
  );
  await assert.rejects(
    () =>
      createQuickJSPool({
        catalog,
        maxResultBytes: -1,
        runnerUrl: RUNNER_URL,
      }),
    RangeError,
  );
});
