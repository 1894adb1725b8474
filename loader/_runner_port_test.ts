import assert from "node:assert/strict";
import { readLines, runnerSpecifier } from "./_runner_port.ts";

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
