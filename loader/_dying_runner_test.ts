/**
 * A runner for the pool's tests that dies in the middle of its run: it
 * sends the run's lines past its `maxLogBytes` with no `truncated`, a line
 * that is not a runner's and one of another run, then exits without an
 * answer. The pool must keep only the run's own lines, within its cap.
 *
 * @module
 */

import { readLines } from "./_runner_port.ts";
import type { HostMessage } from "./_runner_protocol.ts";

const encoder = new TextEncoder();

function send(message: Record<string, unknown>): void {
  const bytes = encoder.encode(`${JSON.stringify(message)}\n`);
  for (let offset = 0; offset < bytes.length;) {
    offset += Deno.stdout.writeSync(bytes.subarray(offset));
  }
}

function serve(message: HostMessage): void {
  if (message.kind === "init") {
    send({ kind: "ready" });
    return;
  }
  const { id, limits } = message;
  send({ kind: "log", id, level: "log", message: "before" });
  send({ kind: "log", id, level: "shout", message: "not a level" });
  send({ kind: "log", id: id + 1, level: "log", message: "another run's" });
  send({
    kind: "log",
    id,
    level: "warn",
    message: "x".repeat(limits.maxLogBytes),
  });
  Deno.exit(3);
}

if (import.meta.main) {
  await readLines(Deno.stdin.readable, (line) => serve(JSON.parse(line)));
}
