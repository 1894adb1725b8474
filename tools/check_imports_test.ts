import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../", import.meta.url));

Deno.test("tools/check_imports.ts fails, naming git, in a copy of the checkout that is no git repository, where it checked no module and passed", async () => {
  const temp = await Deno.makeTempDir();
  try {
    const copy = `${temp}/a b#c %20 ü copy`;
    await Deno.mkdir(`${copy}/tools`, { recursive: true });
    await Deno.copyFile(`${ROOT}deno.json`, `${copy}/deno.json`);
    await Deno.copyFile(
      `${ROOT}tools/check_imports.ts`,
      `${copy}/tools/check_imports.ts`,
    );
    const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--no-prompt",
        "--allow-read",
        "--allow-run",
        "--allow-write=.tmp",
        "tools/check_imports.ts",
      ],
      cwd: copy,
      // The temp folder may lie inside a repository: git stops above it.
      env: { GIT_CEILING_DIRECTORIES: temp },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const output = new TextDecoder().decode(stdout) +
      new TextDecoder().decode(stderr);
    assert.equal(code, 1, output);
    assert.match(output, /git ls-files/);
    assert.doesNotMatch(output, /0 modules checked/);
  } finally {
    await Deno.remove(temp, { recursive: true });
  }
});
