import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../", import.meta.url));

/** What the declaration writer reads to write the protocol entry's types. */
const COPIED = ["protocol", "tools", "deno.json", "deno.lock"];

async function copy(from: string, to: string): Promise<void> {
  if (!(await Deno.stat(from)).isDirectory) {
    await Deno.copyFile(from, to);
    return;
  }
  await Deno.mkdir(to, { recursive: true });
  for await (const { name } of Deno.readDir(from)) {
    await copy(`${from}/${name}`, `${to}/${name}`);
  }
}

Deno.test("deno task build:node's declaration writer works from a checkout whose path holds a backslash, a space, #, % and non-ASCII letters", async () => {
  const temp = await Deno.makeTempDir();
  try {
    const checkout = `${temp}/my\\dir #1 %41 é 日本 checkout`;
    await Deno.mkdir(checkout, { recursive: true });
    for (const path of COPIED) {
      await copy(`${ROOT}${path}`, `${checkout}/${path}`);
    }
    await Deno.symlink(`${ROOT}node_modules`, `${checkout}/node_modules`);
    // The writer types the entries the bundle built: here the protocol's.
    await Deno.mkdir(`${checkout}/dist/node/protocol`, { recursive: true });
    await Deno.writeTextFile(`${checkout}/dist/node/protocol/mod.js`, "");
    const { code, stderr } = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--no-prompt",
        "--lock=tools/deno.lock",
        "--allow-read=.",
        "--allow-write=dist",
        "--allow-env",
        "tools/write_node_types.ts",
      ],
      cwd: checkout,
      stdout: "null",
      stderr: "piped",
    }).output();
    assert.equal(code, 0, new TextDecoder().decode(stderr));
    const types = await Deno.readTextFile(
      `${checkout}/dist/node/protocol/mod.d.ts`,
    );
    assert.match(types, /export \* from "\.\/error_codes\.js"/);
  } finally {
    await Deno.remove(temp, { recursive: true });
  }
});
