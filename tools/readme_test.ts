import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
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

/**
 * Starts `task serve` on a free port over the fixture packs, hands `use`
 * its host (`127.0.0.1:N`) and stops the server once `use` settles.
 */
async function withDeliveryServer(
  use: (host: string) => Promise<void>,
): Promise<void> {
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
    await use(await ready.promise);
  } finally {
    server.kill();
    await server.status;
    await reading.catch(() => {});
  }
}

/**
 * Runs `script` in bash, strictly, from `cwd`, with `env` set (a path the
 * script names goes there, quoted where it is used, as a checkout's path may
 * hold a space); answers its exit code and output.
 */
async function runScript(
  script: string,
  cwd: string | URL,
  env: Record<string, string> = {},
): Promise<{ code: number; text: string }> {
  const { code, stdout } = await new Deno.Command("bash", {
    // A user types the block in a shell of their own: the INIT_CWD of the
    // task running these tests (npx sets it too) would send each task in it
    // to this checkout's folder instead of the one the block runs in.
    args: ["-euo", "pipefail", "-c", `unset INIT_CWD\n${script}`],
    cwd,
    env: { ...env, NO_COLOR: "1" },
    stderr: "null",
  }).output();
  return { code, text: new TextDecoder().decode(stdout) };
}

Deno.test("README's command-line block runs against a delivery server", async () => {
  const lines = blockWith("curl").filter((line) =>
    /^(curl|echo|npx -y deno@2\.9\.6 task run) /.test(line)
  );
  assert.equal(lines.length, 4, "the curl, echo and two run lines");
  const dir = await Deno.makeTempDir();
  try {
    await withDeliveryServer(async (host) => {
      const script = lines.join("\n")
        .replaceAll("npx -y deno@2.9.6", Deno.execPath())
        .replaceAll("127.0.0.1:8000", host)
        .replaceAll("/tmp/guest.js", `${dir}/guest.js`);
      const { code, text } = await runScript(script, ROOT);
      assert.equal(code, 0, text);
      assert.match(text, /"greet"/);
      assert.equal(text.match(/"value": "Hello, cli!"/g)?.length, 2, text);
    });
  } finally {
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

/** The `sh` block of a guide in docs/ that contains `marker`, line by line, comments kept. */
async function guideBlock(guide: string, marker: string): Promise<string[]> {
  const text = await Deno.readTextFile(new URL(`docs/${guide}`, ROOT));
  const block = [...text.matchAll(/```sh\n([\s\S]*?)```/g)]
    .map((match) => match[1]!).find((body) => body.includes(marker));
  assert.ok(block, `docs/${guide} has an sh block with ${marker}`);
  return block.trim().split("\n");
}

Deno.test("docs/loader.md's command-line block gives the values its comments name", async () => {
  const lines = await guideBlock("loader.md", "task run /tmp/add.js");
  const runs = lines.filter((line) => line.startsWith("deno task run "));
  assert.equal(runs.length, 2, "the on-disk and the remote run");
  const dir = await Deno.makeTempDir();
  try {
    await withDeliveryServer(async (host) => {
      for (const line of lines) {
        const [command, comment] = line.split(/\s+#\s*/);
        const script = command!
          .replace(/^deno task /, `${Deno.execPath()} task -q `)
          .replaceAll("127.0.0.1:8000", host)
          .replaceAll("/tmp/", `${dir}/`);
        const { code, text } = await runScript(script, ROOT);
        assert.equal(code, 0, `${line}\n${text}`);
        if (!command!.startsWith("deno task run ")) continue;
        // The comment names the value: `value 5` or `"Hello, cli!"`.
        const expected = JSON.parse(comment!.replace(/^value /, ""));
        assert.deepEqual(JSON.parse(text).value, expected, line);
      }
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("docs/staging.md's release block stages relative folders and verifies them against the last release", async () => {
  const lines = (await guideBlock("staging.md", "--previous ./last-release"))
    .filter((line) => !line.startsWith("#"));
  assert.equal(lines.length, 2, "the stage and verify lines");
  const dir = await Deno.makeTempDir();
  try {
    const paths = {
      DENO: Deno.execPath(),
      DENO_JSON: fileURLToPath(new URL("deno.json", ROOT)),
      PACKS: fileURLToPath(new URL("fixtures/packs", ROOT)),
    };
    const task = '"$DENO" task -q --config "$DENO_JSON"';
    // The last release: the same packs, staged before, its index kept.
    const { code: prepared } = await runScript(
      `cp -R "$PACKS" packs
       ${task} stage --packs ./packs --out ./released
       mkdir last-release && cp released/index.json last-release/`,
      dir,
      paths,
    );
    assert.equal(prepared, 0);
    const { code, text } = await runScript(
      lines.join("\n").replaceAll("deno task", task),
      dir,
      paths,
    );
    assert.equal(code, 0, text);
    assert.match(text, /^Staged 4 packs and 10 modules/m);
    assert.match(text, /^OK: 4 packs, 10 modules/m);
    assert.ok((await Deno.stat(`${dir}/staged/index.json`)).isFile);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the .ci/run script runs the README's test command", async () => {
  const ci = await Deno.readTextFile(new URL("../.ci/run", import.meta.url));
  assert.match(ci, /npx -y deno@2\.9\.6 task test/);
});
