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
