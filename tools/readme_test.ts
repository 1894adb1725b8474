import assert from "node:assert/strict";
import { ERROR_CODES } from "../protocol/mod.ts";

const readme = await Deno.readTextFile(
  new URL("../README.md", import.meta.url),
);

Deno.test("README starts with the serve and test commands", () => {
  const block = readme.match(/```sh\n([\s\S]*?)```/)?.[1] ?? "";
  const commands = block.trim().split("\n").map((line) =>
    line.replace(/\s+#.*$/, "")
  );
  assert.deepEqual(commands, [
    "npx -y deno@2.9.6 task serve",
    "npx -y deno@2.9.6 task test",
  ]);
  assert.ok(
    readme.indexOf("```sh") < readme.indexOf("\n## "),
    "the commands come first",
  );
});

Deno.test("README documents every error code with what to do", () => {
  for (const [code, { remedy }] of Object.entries(ERROR_CODES)) {
    const row = readme.split("\n").find((line) =>
      line.replace(/ +/g, " ").startsWith(`| \`${code}\` |`)
    );
    assert.ok(
      row,
      `README has no row for ${code}: run deno run tools/error_table.ts`,
    );
    assert.ok(
      row.includes(remedy),
      `README's row for ${code} lacks its remedy`,
    );
  }
});

Deno.test("the .ci/run script runs the README's test command", async () => {
  const ci = await Deno.readTextFile(new URL("../.ci/run", import.meta.url));
  assert.match(ci, /npx -y deno@2\.9\.6 task test/);
});
