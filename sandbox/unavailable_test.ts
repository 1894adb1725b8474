import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

Deno.test("both tiers answer SANDBOX_UNAVAILABLE, and the caller keeps running, without permission to start Deno", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const script = `${dir}/caller.ts`;
    const mod = new URL("./mod.ts", import.meta.url).href;
    await Deno.writeTextFile(
      script,
      `import { createProcessSandbox, createWorkerSandbox } from ${
        JSON.stringify(mod)
      };
const answers = [];
for (const create of [() => createWorkerSandbox(), () => createProcessSandbox()]) {
  await using sandbox = create();
  const result = await sandbox.run("export default 1;");
  answers.push(result.ok ? "ok" : [result.error.code, result.error.message]);
}
console.log(JSON.stringify(answers));
`,
    );
    const { code, stdout } = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--no-prompt",
        `--config=${fileURLToPath(new URL("../deno.json", import.meta.url))}`,
        script,
      ],
      stdout: "piped",
      stderr: "inherit",
    }).output();
    assert.equal(code, 0, "the caller ends normally");
    const answers = JSON.parse(new TextDecoder().decode(stdout));
    assert.equal(answers.length, 2);
    for (const [answerCode, message] of answers) {
      assert.equal(answerCode, "SANDBOX_UNAVAILABLE");
      assert.match(message, /--allow-run=/);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name:
    "both tiers answer SANDBOX_UNAVAILABLE naming the system's refusal, not a permission, when no file descriptors are left, and run again once they are",
  // The caller lowers its own descriptor limit and holds every descriptor
  // left, so the child's pipes cannot open; it then lets them go.
  ignore: Deno.build.os !== "linux",
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      const script = `${dir}/caller.ts`;
      const mod = new URL("./mod.ts", import.meta.url).href;
      await Deno.writeTextFile(
        script,
        `import { createProcessSandbox, createWorkerSandbox } from ${
          JSON.stringify(mod)
        };
const limit = await new Deno.Command("prlimit", {
  args: ["--nofile=256", "--pid", String(Deno.pid)],
}).output();
if (!limit.success) Deno.exit(3);
const answers = [];
for (const create of [() => createWorkerSandbox(), () => createProcessSandbox()]) {
  await using sandbox = create();
  const held = [];
  try {
    for (;;) held.push(Deno.openSync("/dev/null"));
  } catch {
    // Every descriptor is taken.
  }
  const refused = await sandbox.run("export default 1;");
  for (const file of held) file.close();
  const answered = await sandbox.run("export default 2;");
  answers.push([
    refused.ok ? "ok" : refused.error.code,
    refused.ok ? "" : refused.error.message,
    answered.ok ? answered.value : answered.error.code,
  ]);
}
console.log(JSON.stringify(answers));
`,
      );
      const { code, stdout } = await new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "--allow-all",
          `--config=${fileURLToPath(new URL("../deno.json", import.meta.url))}`,
          script,
        ],
        stdout: "piped",
        stderr: "inherit",
      }).output();
      assert.equal(code, 0, "the caller ends normally");
      const answers = JSON.parse(new TextDecoder().decode(stdout));
      assert.equal(answers.length, 2);
      for (const [answerCode, message, second] of answers) {
        assert.equal(answerCode, "SANDBOX_UNAVAILABLE");
        assert.match(message, /too many open files/i);
        assert.doesNotMatch(message, /--allow-run|\/usr\//);
        assert.equal(second, 2);
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
