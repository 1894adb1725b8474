import assert from "node:assert/strict";
import { DEFAULT_LIMITS } from "./_limits.ts";
import { DEFAULT_RUN_INPUT_BOUNDS } from "../protocol/run_inputs.ts";
import { prepareRun, readRunSettings } from "./_prepare.ts";
import { readRunnerMessage, type RunnerMessage } from "./_runner_protocol.ts";
import { createTestCatalog } from "./_test_catalog_test.ts";
import { serveQuickJSRunner } from "./quickjs_runner.ts";

/** The longest line the channel below carries, as a pipe carries one string. */
const MAX_LINE_CHARS = 4096;

Deno.test("a runner whose answer cannot be sent whole sends it without its logs, marked truncated", async () => {
  const catalog = createTestCatalog([]);
  const answers: RunnerMessage[] = [];
  let receive: (message: unknown) => void = () => {};
  const answered = Promise.withResolvers<void>();
  const ready = serveQuickJSRunner({
    listen: (onMessage) => {
      receive = onMessage;
    },
    send: (message) => {
      // What a process's pipe does with a line longer than a string holds.
      const line = JSON.stringify(message);
      if (line.length > MAX_LINE_CHARS) {
        throw new RangeError("Invalid string length");
      }
      const read = readRunnerMessage(JSON.parse(line));
      assert.ok(read !== null, line);
      answers.push(read);
      if (read.kind === "result" && read.id === 2) answered.resolve();
    },
  });
  receive({ kind: "init", memoryLimitBytes: DEFAULT_LIMITS.memoryLimitBytes });
  await ready;
  const settings = readRunSettings(
    {},
    DEFAULT_LIMITS,
    DEFAULT_RUN_INPUT_BOUNDS,
  );
  const sources = [
    "console.log('fits'); export default 1;",
    "for (let i = 0; i < 10; i++) console.log('x'.repeat(1000)); export default 2;",
  ];
  for (const [index, source] of sources.entries()) {
    const prepared = await prepareRun(
      catalog,
      { source, packages: [] },
      settings,
    );
    assert.ok(!("code" in prepared));
    receive({
      kind: "run",
      id: index + 1,
      prepared,
      limits: settings.limits,
      contextJson: undefined,
      maxResultBytes: settings.maxResultBytes,
    });
  }
  await answered.promise;
  const results = answers.flatMap((answer) =>
    answer.kind === "result" ? [answer.result] : []
  );
  assert.deepEqual(
    results.map(({ ok, logs, logsTruncated }) => ({
      ok,
      logs: logs.length,
      logsTruncated,
    })),
    [
      { ok: true, logs: 1, logsTruncated: false },
      { ok: true, logs: 0, logsTruncated: true },
    ],
  );
  assert.deepEqual(
    results.map((result) => result.ok && result.value),
    [1, 2],
  );
});
