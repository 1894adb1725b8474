import assert from "node:assert/strict";
import { processRunners, readLines, runnerSpecifier } from "./_runner_port.ts";

Deno.test("runnerSpecifier() runs the published runner by its jsr: export and any other URL as it is", () => {
  assert.equal(
    runnerSpecifier(
      new URL("https://jsr.io/@cordon/cordon/0.1.0/loader/quickjs_runner.ts"),
    ),
    "jsr:@cordon/cordon@0.1.0/loader/runner",
  );
  const local = new URL("file:///srv/app/loader/quickjs_runner.ts");
  assert.equal(runnerSpecifier(local), local.href);
  const other = new URL("https://example.com/loader/quickjs_runner.ts");
  assert.equal(runnerSpecifier(other), other.href);
});

Deno.test("readLines() gives each line whole, however the stream cuts it", async () => {
  const text = `{"a":1}\n${"x".repeat(200_000)}\n\n{"é":"ü"}\npartial`;
  const bytes = new TextEncoder().encode(text);
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      for (let at = 0; at < bytes.length; at += 7) {
        controller.enqueue(bytes.subarray(at, at + 7));
      }
      controller.close();
    },
  });
  const lines: string[] = [];
  await readLines(stream, (line) => lines.push(line));
  assert.deepEqual(lines, ['{"a":1}', "x".repeat(200_000), "", '{"é":"ü"}']);
});

Deno.test("readLines() rejects with what its onLine threw and cancels the stream, where it swallowed the error and stopped reading", async () => {
  let cancelled = false;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      controller.enqueue(new TextEncoder().encode("a line\n"));
    },
    cancel() {
      cancelled = true;
    },
  });
  const fault = new TypeError("the handler failed");
  await assert.rejects(
    readLines(stream, () => {
      throw fault;
    }),
    (error) => error === fault,
  );
  assert.equal(cancelled, true);
});

Deno.test("readLines() ends with the lines read when the stream fails, as a killed runner's pipe does", async () => {
  let pulls = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (pulls++ === 0) controller.enqueue(new TextEncoder().encode("a\nb"));
      else controller.error(new Error("the pipe broke"));
    },
  });
  const lines: string[] = [];
  await readLines(stream, (line) => lines.push(line));
  assert.deepEqual(lines, ["a"]);
});

Deno.test("processRunners() kills a runner whose line handler threw and ends it naming what was thrown, where the reading stopped in silence and the runner lived on unheard", async () => {
  const exited = Promise.withResolvers<
    { code: number; signal: string | null }
  >();
  let kills = 0;
  const child = {
    stdin: new WritableStream<Uint8Array>(),
    // Lines without end, as a runner that logs in a loop writes them.
    stdout: new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.enqueue(new TextEncoder().encode('{"kind":"ready"}\n'));
      },
    }),
    stderr: new ReadableStream<Uint8Array>({ start: (c) => c.close() }),
    status: exited.promise,
    kill() {
      kills++;
      exited.resolve({ code: 137, signal: "SIGKILL" });
    },
    ref() {},
    unref() {},
  };
  const deno = {
    ...Deno,
    Command: class {
      spawn() {
        return child;
      }
    },
  } as unknown as Parameters<typeof processRunners>[0];
  const ended = Promise.withResolvers<string>();
  processRunners(deno, new URL("file:///runner.ts"))({
    message() {
      throw new TypeError("the pool's handler failed");
    },
    exit: (detail) => ended.resolve(detail),
  });
  const detail = await ended.promise;
  assert.equal(kills, 1);
  assert.match(detail, /TypeError: the pool's handler failed/);
  assert.match(detail, /fault of cordon/);
});

Deno.test("processRunners() treats a runner whose ref() or unref() fails as gone, where the BadResource Deno throws in the moment after a child exits rejected the pool's run", async () => {
  const exited = Promise.withResolvers<
    { code: number; signal: string | null }
  >();
  const refusals: string[] = [];
  const child = {
    stdin: new WritableStream<Uint8Array>(),
    stdout: new ReadableStream<Uint8Array>({ start: (c) => c.close() }),
    stderr: new ReadableStream<Uint8Array>({ start: (c) => c.close() }),
    status: exited.promise,
    kill() {
      exited.resolve({ code: 137, signal: "SIGKILL" });
    },
    // What Deno's ChildProcess does once its process exited and before its
    // status settles: the resource these ask for is closed.
    ref() {
      refusals.push("ref");
      throw new Deno.errors.BadResource("Bad resource ID");
    },
    unref() {
      refusals.push("unref");
      throw new Deno.errors.BadResource("Bad resource ID");
    },
  };
  const deno = {
    ...Deno,
    Command: class {
      spawn() {
        return child;
      }
    },
  } as unknown as Parameters<typeof processRunners>[0];
  const exits: string[] = [];
  const port = processRunners(deno, new URL("file:///runner.ts"))({
    message() {},
    exit: (detail) => exits.push(detail),
  });
  port.hold(true);
  port.hold(false);
  await port.kill();
  assert.deepEqual(refusals, ["ref", "unref"]);
  assert.deepEqual(exits, ["signal SIGKILL"]);
});
