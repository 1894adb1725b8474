import assert from "node:assert/strict";
import { PROCESS_BOOTSTRAP_URL, v8Flags, workerHostUrl } from "./_sources.ts";
import { resultBound } from "./_result_bound.ts";
import { lines, startHost } from "./_spawn_host_test.ts";

// The guest realm's console passes on the line that meets maxLogBytes and
// nothing after it, so a flood costs the pipe to the host no more than
// the budget and one line. The host's collector keeps the same lines
// either way, so these tests count what leaves the realm.

const MAX_LOG_BYTES = 100;

/**
 * A guest whose console argument logs from its toJSON, 50 levels down:
 * each call but the innermost formats its line while the calls below it
 * log, and the budget is used up in there.
 */
const NESTED_LOGGING_GUEST = `function nest(level) {
  if (level === 0) return "leaf";
  return { toJSON() { console.log(nest(level - 1)); return "x".repeat(1000); } };
}
console.log(nest(50));
export default "done";`;

/** The innermost line, which fits, then the first that does not. */
const LINES_PASSED_ON = ["leaf", `"${"x".repeat(1000)}"`];

Deno.test("a process-tier child passes on no console line after the one that met maxLogBytes, also one logged while another was formatted", async () => {
  const { child, writer } = await startHost(
    [PROCESS_BOOTSTRAP_URL],
    `${
      JSON.stringify({
        nonce: "n:",
        parent: Deno.pid,
        maxLogBytes: MAX_LOG_BYTES,
        result: resultBound(1024),
        parseOnly: false,
        source: NESTED_LOGGING_GUEST,
        context: null,
      })
    }\n`,
    { stdout: "piped", stderr: "null" },
  );
  const logged: string[] = [];
  let outcome: unknown;
  for await (const line of lines(child.stdout)) {
    const message = JSON.parse(line.slice("n:".length));
    if (message.t === "log") logged.push(message.message);
    if (message.t === "result") outcome = message.outcome;
  }
  await writer.close();
  await child.status;
  assert.deepEqual(outcome, { ok: true, value: "done" });
  assert.equal(logged.length, LINES_PASSED_ON.length, "lines passed on");
  assert.deepEqual(logged, LINES_PASSED_ON);
});

Deno.test("a worker host passes on no console line after the one that met maxLogBytes, also one logged while another was formatted", async () => {
  const { child, writer } = await startHost(
    [
      "--unstable-worker-options",
      v8Flags(64 * 1024 * 1024),
      workerHostUrl(false),
    ],
    `${
      JSON.stringify({
        t: "run",
        id: "1",
        maxLogBytes: MAX_LOG_BYTES,
        result: resultBound(1024),
        source: NESTED_LOGGING_GUEST,
        context: null,
        watch: {
          timeoutMs: 60_000,
          graceMs: 200,
          residentBytes: null,
          pollMs: 50,
        },
      })
    }\n`,
    { stdout: "piped", stderr: "null" },
  );
  const logged: string[] = [];
  let outcome: unknown;
  for await (const line of lines(child.stdout)) {
    const message = JSON.parse(line);
    if (message.t === "log") logged.push(message.message);
    if (message.t !== "result") continue;
    outcome = message.outcome;
    break;
  }
  await writer.close();
  await child.status;
  assert.deepEqual(outcome, { ok: true, value: "done" });
  assert.equal(logged.length, LINES_PASSED_ON.length, "lines passed on");
  assert.deepEqual(logged, LINES_PASSED_ON);
});
