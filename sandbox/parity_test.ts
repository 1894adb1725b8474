import assert from "node:assert/strict";
import {
  expectedSnippetOutcome,
  runSnippet,
  snippetOutcomeOf,
} from "../fixtures/run_snippets.ts";
import { SNIPPETS } from "../fixtures/snippets.ts";
import {
  MAX_LOG_BYTES,
  MAX_NESTING_DEPTH,
  type SandboxResult,
} from "../protocol/mod.ts";
import { createProcessSandbox } from "./process_sandbox.ts";
import type { SandboxRunOptions } from "./types.ts";
import { createWorkerSandbox } from "./worker_sandbox.ts";
import { createQuickJSLoader } from "../loader/mod.ts";
import { EMPTY_CATALOG } from "../catalog/mod.ts";

/** Anything that runs a guest module and answers with a SandboxResult. */
interface ParityRunner extends AsyncDisposable {
  run(source: string, options: SandboxRunOptions): Promise<SandboxResult>;
}

/** One tier in the parity test. */
interface ParityTier {
  /** The tier's name, as in `metrics.tier`. */
  name: string;
  /** Creates the tier's runner; the test disposes it. */
  create(): ParityRunner;
}

function createQuickJSRunner(): ParityRunner {
  const loading = createQuickJSLoader({ catalog: EMPTY_CATALOG });
  return {
    async run(source, options) {
      const loader = await loading;
      return loader.run(source, options);
    },
    async [Symbol.asyncDispose]() {
      (await loading)[Symbol.dispose]();
    },
  };
}

const TIERS: ParityTier[] = [
  { name: "worker", create: () => createWorkerSandbox({ pool: 1 }) },
  { name: "process", create: () => createProcessSandbox() },
  { name: "quickjs", create: createQuickJSRunner },
];

Deno.test("every tier gives every shared snippet its expected answer, and the same answer", async (t) => {
  const runners = TIERS.map((tier) => ({ tier, runner: tier.create() }));
  try {
    for (const snippet of SNIPPETS) {
      await t.step(snippet.name, async () => {
        const results = await Promise.all(
          runners.map(({ runner }) => runSnippet(runner, snippet)),
        );
        const want = expectedSnippetOutcome(snippet);
        const answers = results.map((result, index) => {
          const tier = runners[index]!.tier.name;
          assert.equal(result.metrics.tier, tier);
          const got = snippetOutcomeOf(snippet, result);
          assert.deepEqual(got, want, `${tier} tier`);
          return got;
        });
        for (const answer of answers.slice(1)) {
          assert.deepEqual(answer, answers[0]);
        }
      });
    }
  } finally {
    await Promise.all(
      runners.map(({ runner }) => runner[Symbol.asyncDispose]()),
    );
  }
});

Deno.test("the shared snippets cover every kind the tiers must agree on", () => {
  const codes = new Set<string>(
    SNIPPETS.map((snippet) => snippet.expect.ok ? "ok" : snippet.expect.code),
  );
  for (
    const code of [
      "ok",
      "GUEST_SYNTAX_ERROR",
      "GUEST_ERROR",
      "RESULT_NOT_SERIALIZABLE",
      "TIMEOUT",
      "ABORTED",
      "STACK_OVERFLOW",
    ]
  ) {
    assert.ok(codes.has(code), code);
  }
  const names = SNIPPETS.map((snippet) => snippet.name);
  assert.equal(new Set(names).size, names.length, "snippet names are unique");
  assert.ok(Object.isFrozen(SNIPPETS) && Object.isFrozen(SNIPPETS[0]));
});

Deno.test("every tier refuses a context that is not JSON data with the same reason, before any guest code runs", async () => {
  const cycle: Record<string, unknown> = {};
  cycle.self = cycle;
  let deep: unknown = 1;
  for (let i = 0; i < 200_000; i++) deep = [deep];
  const contexts: [unknown, RegExp][] = [
    [{ callback() {} }, /context must be JSON data, but it holds a function$/],
    [[Symbol("s")], /context must be JSON data, but it holds a symbol$/],
    [{ n: 1n }, /context must be JSON data, but it holds a BigInt$/],
    [() => 1, /context must be JSON data, but it holds a function$/],
    [cycle, /context must be JSON data, but writing it failed: .*circular/],
    [
      deep,
      new RegExp(
        `context must be JSON data, but it is nested deeper than ${MAX_NESTING_DEPTH} levels; pass flatter data$`,
      ),
    ],
  ];
  const runners = TIERS.map((tier) => tier.create());
  try {
    for (const runner of runners) {
      for (const [context, message] of contexts) {
        await assert.rejects(
          () =>
            runner.run("export default (c) => c", {
              context: context as never,
            }),
          (error: Error) =>
            error instanceof TypeError && message.test(error.message),
        );
      }
      const dated = await runner.run("export default (c) => c", {
        context: { at: new Date(0), missing: undefined, n: NaN } as never,
      });
      assert.deepEqual(dated.ok && dated.value, {
        at: "1970-01-01T00:00:00.000Z",
        n: null,
      });
    }
  } finally {
    await Promise.all(runners.map((runner) => runner[Symbol.asyncDispose]()));
  }
});

Deno.test("every tier takes maxLogBytes up to the same bound, in bytes", async () => {
  const runners = TIERS.map((tier) => tier.create());
  try {
    for (const runner of runners) {
      const at = await runner.run("export default 1", {
        maxLogBytes: MAX_LOG_BYTES,
      });
      assert.equal(at.ok, true);
      await assert.rejects(
        () =>
          runner.run("export default 1", { maxLogBytes: MAX_LOG_BYTES + 1 }),
        {
          name: "RangeError",
          message: new RegExp(
            `maxLogBytes must be an integer from 0 to ${MAX_LOG_BYTES} bytes$`,
          ),
        },
      );
    }
  } finally {
    await Promise.all(runners.map((runner) => runner[Symbol.asyncDispose]()));
  }
});

const JSON_PARITY = SNIPPETS.filter((snippet) =>
  snippet.name.startsWith("JSON parity: ")
);

/** A snippet's default export, as plain Deno evaluates its module. */
async function plainValueOf(source: string): Promise<unknown> {
  const module = await import(
    `data:text/javascript,${encodeURIComponent(source)}`
  );
  return module.default;
}

/** What `JSON.stringify` writes for a value, or the error it throws. */
function plainJson(value: unknown): string | Error {
  try {
    return JSON.stringify(value) ?? "null";
  } catch (error) {
    return error as Error;
  }
}

Deno.test("each JSON parity snippet expects what JSON.stringify writes in plain Deno", async () => {
  assert.ok(JSON_PARITY.length >= 10);
  for (const snippet of JSON_PARITY) {
    const written = plainJson(await plainValueOf(snippet.source));
    if (snippet.expect.ok) {
      assert.equal(written, JSON.stringify(snippet.expect.value), snippet.name);
    } else {
      assert.ok(written instanceof TypeError, snippet.name);
    }
  }
});

Deno.test("every tier writes each JSON parity value, as a result and as a context, as JSON.stringify does, keys in its order", async () => {
  const runners = TIERS.map((tier) => ({ tier, runner: tier.create() }));
  try {
    for (const snippet of JSON_PARITY.filter((each) => each.expect.ok)) {
      const value = await plainValueOf(snippet.source);
      const want = plainJson(value);
      for (const { tier, runner } of runners) {
        const returned = await runner.run(snippet.source, {
          timeoutMs: 10_000,
        });
        assert.equal(returned.ok, true, `${tier.name}: ${snippet.name}`);
        assert.equal(
          returned.ok && JSON.stringify(returned.value),
          want,
          `${tier.name}: ${snippet.name}`,
        );
        const echoed = await runner.run("export default (c) => c;", {
          context: value as never,
          timeoutMs: 10_000,
        });
        assert.equal(
          echoed.ok && JSON.stringify(echoed.value),
          want,
          `${tier.name} context: ${snippet.name}`,
        );
      }
    }
  } finally {
    await Promise.all(
      runners.map(({ runner }) => runner[Symbol.asyncDispose]()),
    );
  }
});
