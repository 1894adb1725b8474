import assert from "node:assert/strict";
import { createProcessSandbox } from "./process_sandbox.ts";
import { createWorkerSandbox } from "./worker_sandbox.ts";
import { readText } from "./_spawn.ts";

// The code that reads a child's output (line splitting, frame parsing, the
// log collector) runs inside readText's callback. A throw there is a fault
// of this process, not of the guest: it must end the run with the tier's
// crash code and name what was thrown, not stop the reading in silence
// and leave the run waiting for its deadline or reading half an answer.

Deno.test("readText() rejects with what its callback threw and cancels the stream, where it swallowed the error and stopped reading", async () => {
  let cancelled = false;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      controller.enqueue(new TextEncoder().encode("a line\n"));
    },
    cancel() {
      cancelled = true;
    },
  });
  const fault = new TypeError("the parser failed");
  await assert.rejects(
    readText(stream, () => {
      throw fault;
    }),
    (error) => error === fault,
  );
  assert.equal(cancelled, true);
});

Deno.test("readText() ends with what was read when the stream fails, as a killed child's pipe does", async () => {
  let pulls = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (pulls++ === 0) controller.enqueue(new TextEncoder().encode("read"));
      else controller.error(new Error("the pipe broke"));
    },
  });
  let text = "";
  await readText(stream, (piece) => text += piece);
  assert.equal(text, "read");
});

/** A console line whose collection throws, as a parser bug would. */
const FAULTY_LINE = "cordon test: collecting this line throws";

/**
 * Runs `fn` while the log collector throws on {@linkcode FAULTY_LINE}: it
 * measures each line with a TextEncoder, from inside readText's callback
 * on both tiers.
 */
async function withFaultyCollector<T>(fn: () => Promise<T>): Promise<T> {
  const { encode } = TextEncoder.prototype;
  TextEncoder.prototype.encode = function (this: TextEncoder, input) {
    if (input === FAULTY_LINE) throw new RangeError("the planted fault");
    return encode.call(this, input);
  };
  try {
    return await fn();
  } finally {
    TextEncoder.prototype.encode = encode;
  }
}

for (
  const [tier, create] of [
    ["worker", () => createWorkerSandbox({ pool: 0, concurrency: 1 })],
    ["process", () => createProcessSandbox()],
  ] as const
) {
  Deno.test(`the ${tier} sandbox ends a run whose output reader threw with SANDBOX_CRASHED naming what was thrown, and runs the next one`, async () => {
    await using sandbox = create();
    const result = await withFaultyCollector(() =>
      sandbox.run(
        `console.log(${JSON.stringify(FAULTY_LINE)}); export default 1;`,
        // Calm: the run ends at once when the fault is heard; the deadline
        // is how it ended when it was not.
        { timeoutMs: 20_000 },
      )
    );
    assert.equal(result.ok, false, JSON.stringify(result));
    assert.equal(!result.ok && result.error.code, "SANDBOX_CRASHED");
    assert.match(
      !result.ok ? result.error.message : "",
      /RangeError: the planted fault/,
    );
    const next = await sandbox.run("export default 2;");
    assert.equal(next.ok && next.value, 2, JSON.stringify(next));
  });
}

/** A result whose parsing throws, as a bug of the result reader would. */
const FAULTY_RESULT = "cordon test: parsing this result throws";

/**
 * Runs `fn` while JSON.parse throws a TypeError, no SyntaxError, on text
 * that holds {@linkcode FAULTY_RESULT}: the result reader parses the
 * answer's value with it on both tiers.
 */
async function withFaultyResultReader<T>(fn: () => Promise<T>): Promise<T> {
  const { parse } = JSON;
  JSON.parse = function (text: string, reviver?: never) {
    if (typeof text === "string" && text.includes(FAULTY_RESULT)) {
      throw new TypeError("the planted parse fault");
    }
    return parse(text, reviver);
  };
  try {
    return await fn();
  } finally {
    JSON.parse = parse;
  }
}

for (
  const [tier, create] of [
    ["worker", () => createWorkerSandbox({ pool: 0, concurrency: 1 })],
    ["process", () => createProcessSandbox()],
  ] as const
) {
  Deno.test(`the ${tier} sandbox ends a run whose result reader threw with SANDBOX_CRASHED naming what was thrown, where it took the throw for a broken line of the child`, async () => {
    await using sandbox = create();
    const result = await withFaultyResultReader(() =>
      sandbox.run(`export default ${JSON.stringify(FAULTY_RESULT)};`, {
        timeoutMs: 20_000,
      })
    );
    assert.equal(result.ok, false, JSON.stringify(result));
    assert.equal(!result.ok && result.error.code, "SANDBOX_CRASHED");
    assert.match(
      !result.ok ? result.error.message : "",
      /TypeError: the planted parse fault/,
    );
    const next = await sandbox.run("export default 2;");
    assert.equal(next.ok && next.value, 2, JSON.stringify(next));
  });
}

Deno.test("the process sandbox answers a frame that is JSON but no object as an invalid answer of the child, not as a fault of cordon", async () => {
  // Frames carry the child's nonce: the JSON.parse of the frame's text,
  // made to give null for the child's first frame, stands for a child that
  // wrote `null` there.
  const { parse } = JSON;
  JSON.parse = function (text: string, reviver?: never) {
    if (typeof text === "string" && text.includes('"t":"started"')) {
      return null;
    }
    return parse(text, reviver);
  };
  try {
    await using sandbox = createProcessSandbox();
    const result = await sandbox.run("export default 1;", {
      timeoutMs: 20_000,
    });
    assert.equal(result.ok, false, JSON.stringify(result));
    assert.equal(!result.ok && result.error.code, "SANDBOX_CRASHED");
    assert.match(
      !result.ok ? result.error.message : "",
      /the process sent an invalid answer/,
    );
  } finally {
    JSON.parse = parse;
  }
});
