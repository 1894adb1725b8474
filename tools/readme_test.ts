import assert from "node:assert/strict";
import { ERROR_CODES } from "../protocol/mod.ts";
import { errorTableRows } from "./error_table.ts";

const ROOT = new URL("../", import.meta.url);
const readme = await Deno.readTextFile(new URL("README.md", ROOT));
const errors = await Deno.readTextFile(new URL("docs/errors.md", ROOT));

/** The command lines of every `sh` block, comments dropped. */
function shellCommands(markdown: string): string[] {
  return [...markdown.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((match) =>
    match[1]!.trim().split("\n").map((line) => line.replace(/\s+#.*$/, ""))
  );
}

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

Deno.test("README fits in 8 KiB", () => {
  const bytes = new TextEncoder().encode(readme).length;
  assert.ok(bytes <= 8192, `README is ${bytes} bytes; move detail to docs/`);
});

Deno.test("docs/errors.md documents every error code as the registry does: meaning, remedy, where and HTTP status", () => {
  const rows = new Map(
    errors.split("\n").map((line) => line.replace(/ +/g, " "))
      .filter((line) => line.startsWith("| `"))
      .map((line) => [line.split(" | ", 1)[0]!.slice(2), line]),
  );
  for (const [code, row] of errorTableRows()) {
    const documented = rows.get(`\`${code}\``);
    assert.ok(
      documented,
      `docs/errors.md has no row for ${code}: run deno run tools/error_table.ts`,
    );
    assert.equal(
      documented,
      row.replace(/ +/g, " "),
      `docs/errors.md's row for ${code} differs from the registry: run deno run tools/error_table.ts`,
    );
  }
  assert.equal(rows.size, Object.keys(ERROR_CODES).length, "no extra rows");
});

/** The command lines of the `sh` block that contains `marker`. */
function blockWith(marker: string): string[] {
  const block = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)]
    .map((match) => match[0]).find((text) => text.includes(marker)) ?? "";
  return shellCommands(block);
}

Deno.test("README's pack block packs an npm package and runs it", async () => {
  const lines = blockWith("task pack");
  assert.equal(lines.length, 3, "the pack, echo and run lines");
  const dir = await Deno.makeTempDir();
  try {
    const script = lines.join("\n")
      .replaceAll("npx -y deno@2.9.6", Deno.execPath())
      .replaceAll("/tmp/", `${dir}/`);
    const { code, stdout } = await new Deno.Command("bash", {
      args: ["-euo", "pipefail", "-c", script],
      cwd: ROOT,
      env: { NO_COLOR: "1" },
      stderr: "null",
    }).output();
    const text = new TextDecoder().decode(stdout);
    assert.equal(code, 0, text);
    assert.match(text, /written to /);
    assert.match(text, /"value": "2025-02-28T10:00:00.000Z"/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("README's command-line block runs against a delivery server", async () => {
  const lines = blockWith("curl").filter((line) =>
    /^(curl|echo|npx -y deno@2\.9\.6 task run) /.test(line)
  );
  assert.equal(lines.length, 4, "the curl, echo and two run lines");
  const dir = await Deno.makeTempDir();
  const ready = Promise.withResolvers<string>();
  const server = new Deno.Command(Deno.execPath(), {
    args: ["task", "-q", "serve", "--port", "0"],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const stdout = server.stdout.pipeThrough(new TextDecoderStream());
  const reading = (async () => {
    let text = "";
    for await (const chunk of stdout) {
      text += chunk;
      const url = text.match(/Listening on (\S+)\s/)?.[1];
      if (url) ready.resolve(new URL(url).host);
    }
    ready.reject(new Error(`The server stopped: ${text}`));
  })();
  try {
    const host = await ready.promise;
    const script = lines.join("\n")
      .replaceAll("npx -y deno@2.9.6", Deno.execPath())
      .replaceAll("127.0.0.1:8000", host)
      .replaceAll("/tmp/guest.js", `${dir}/guest.js`);
    const { code, stdout: out } = await new Deno.Command("bash", {
      args: ["-euo", "pipefail", "-c", script],
      cwd: ROOT,
      env: { NO_COLOR: "1" },
      stderr: "null",
    }).output();
    const text = new TextDecoder().decode(out);
    assert.equal(code, 0, text);
    assert.match(text, /"greet"/);
    assert.equal(text.match(/"value": "Hello, cli!"/g)?.length, 2, text);
  } finally {
    server.kill();
    await server.status;
    await reading.catch(() => {});
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("README's stage and verify lines run: the tree they write verifies", async () => {
  const lines = shellCommands(readme).filter((line) =>
    /^npx -y deno@2\.9\.6 task (stage|verify) /.test(line)
  );
  assert.equal(lines.length, 2, "the stage and verify lines");
  const dir = await Deno.makeTempDir();
  try {
    const script = lines.join("\n")
      .replaceAll("npx -y deno@2.9.6", Deno.execPath())
      .replaceAll("/tmp/staged", `${dir}/staged`);
    const { code, stdout } = await new Deno.Command("bash", {
      args: ["-euo", "pipefail", "-c", script],
      cwd: ROOT,
      env: { NO_COLOR: "1" },
      stderr: "null",
    }).output();
    const text = new TextDecoder().decode(stdout);
    assert.equal(code, 0, text);
    assert.match(text, /^Staged 4 packs and 10 modules/m);
    assert.match(text, /^OK: 4 packs, 10 modules/m);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the .ci/run script runs the README's test command", async () => {
  const ci = await Deno.readTextFile(new URL("../.ci/run", import.meta.url));
  assert.match(ci, /npx -y deno@2\.9\.6 task test/);
});
