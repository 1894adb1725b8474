import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../", import.meta.url));

/** What the fixture writer imports and reads. */
const COPIED = [
  "catalog",
  "delivery",
  "policy",
  "protocol",
  "schemas",
  "tools",
  "fixtures/packs",
  "deno.json",
  "deno.lock",
];

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

Deno.test("deno task build:node's fixture writer works from a checkout whose path holds a space, #, %, ? and non-ASCII letters", async () => {
  const temp = await Deno.makeTempDir();
  try {
    const checkout = `${temp}/my #1 %41 ?q é 日本 checkout`;
    await Deno.mkdir(`${checkout}/fixtures`, { recursive: true });
    for (const path of COPIED) {
      await copy(`${ROOT}${path}`, `${checkout}/${path}`);
    }
    await Deno.symlink(`${ROOT}node_modules`, `${checkout}/node_modules`);
    const { code, stderr } = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--no-prompt",
        "--allow-read=.",
        "--allow-write=dist",
        "tools/write_node_fixtures.ts",
      ],
      cwd: checkout,
      stdout: "null",
      stderr: "piped",
    }).output();
    assert.equal(code, 0, new TextDecoder().decode(stderr));
    const delivery = JSON.parse(
      await Deno.readTextFile(`${checkout}/dist/fixtures/delivery.json`),
    );
    assert.ok(delivery.responses.length > 1);
    const index = await Deno.stat(
      `${checkout}/dist/fixtures/staged/index.json`,
    );
    assert.ok(index.isFile);
  } finally {
    await Deno.remove(temp, { recursive: true });
  }
});
