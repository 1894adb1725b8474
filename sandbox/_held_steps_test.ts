import assert from "node:assert/strict";
import { HeldSteps } from "./_held_steps.ts";
import { readText, spawnDeno } from "./_spawn.ts";
import { isRunning } from "./_proc_stat_test.ts";

/** A child that writes a line, then runs until it is killed. */
function runningChild(): Deno.ChildProcess {
  const spawned = spawnDeno(
    ["eval", 'console.log("output"); setInterval(() => {}, 1000);'],
    {},
    "test child",
  );
  if (!spawned.ok) throw new Error(spawned.failure.message);
  return spawned.child;
}

Deno.test("HeldSteps.release() kills a child whose output reader threw, waits for its exit and its other pipe, and undoes every step, where such a child ran on with its pipes, timer and watch held", async () => {
  const child = runningChild();
  await child.stdin.close();
  const held = new HeldSteps(child);
  const undone: string[] = [];
  held.undo(() => undone.push("abort listener"));
  held.undo(() => undone.push("memory watch"));
  held.setTimer(() => undone.push("timer fired"), 120_000);
  // The stdout part fails at the child's first output, as a parser that
  // throws on a line would, while the child runs on.
  const { promise: output, resolve: sawOutput } = Promise.withResolvers<
    void
  >();
  const stdoutRead = readText(child.stdout, () => sawOutput());
  await assert.rejects(
    held.read([
      child.status,
      output.then(() => {
        throw new Error("the reader failed");
      }),
      readText(child.stderr, () => {}),
    ]),
    { message: "the reader failed" },
  );
  assert.ok(isRunning(child.pid), "the child runs until it is released");
  await held.release();
  const status = await child.status;
  assert.equal(status.signal, "SIGKILL");
  await stdoutRead;
  assert.deepEqual(undone, ["memory watch", "abort listener"]);
});

Deno.test("HeldSteps.release() cancels the pipes nothing reads yet, and throws a step's error only once every other step is undone", async () => {
  const child = runningChild();
  const held = new HeldSteps(child);
  const undone: string[] = [];
  held.undo(() => undone.push("first"));
  held.undo(() => {
    throw new Error("a step failed");
  });
  held.undo(() => undone.push("last"));
  await assert.rejects(held.release(), { message: "a step failed" });
  assert.equal((await child.status).signal, "SIGKILL");
  assert.deepEqual(undone, ["last", "first"]);
});
