import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { runScript } from "../tools/_script_run_test.ts";

// What serveDelivery() needs of its process's Deno permissions, run under
// exactly the flags an application would give it.

const DELIVERY_MOD = new URL("./mod.ts", import.meta.url).href;
const DENO_JSON = fileURLToPath(new URL("../deno.json", import.meta.url));
const PACKS = fileURLToPath(new URL("../fixtures/packs", import.meta.url));

function freePort(): number {
  using listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  return listener.addr.port;
}

/** Serves the fixture packs under `flags`; "ok" and the listing's status, or the refusal. */
async function serveUnder(
  flags: string[],
  port: number,
  connectionGuard: boolean,
): Promise<string[]> {
  return await runScript(
    `import { serveDelivery } from ${JSON.stringify(DELIVERY_MOD)};
try {
  await using server = await serveDelivery({
    packsDir: ${JSON.stringify(PACKS)},
    port: ${port},
    connectionGuard: ${connectionGuard},
  });
  const answer = await fetch("http://127.0.0.1:${port}/api/sandbox-modules");
  await answer.body?.cancel();
  console.log(JSON.stringify(["ok", String(answer.status)]));
} catch (error) {
  console.log(JSON.stringify([String(error.code), error.message]));
}
`,
    { flags },
  ) as string[];
}

Deno.test("serveDelivery() with the connection guard refuses with DELIVERY_LISTEN_FAILED naming --allow-net=127.0.0.1 when only its own port is granted", async () => {
  const port = freePort();
  const [code, message] = await serveUnder(
    [`--allow-read=${PACKS}`, `--allow-net=127.0.0.1:${port}`],
    port,
    true,
  );
  assert.equal(code, "DELIVERY_LISTEN_FAILED", message);
  assert.match(message!, /--allow-net=127\.0\.0\.1[ ,;)]/);
  assert.match(message!, /connectionGuard: false/);
});

Deno.test("serveDelivery() without the connection guard serves with read on the packs folder and net on its own port only", async () => {
  const port = freePort();
  const answer = await serveUnder(
    [`--allow-read=${PACKS}`, `--allow-net=127.0.0.1:${port}`],
    port,
    false,
  );
  assert.deepEqual(answer, ["ok", "200"]);
});

/** The source of `./lib/more.js` in {@linkcode writeMathPack}'s pack. */
const MORE = "export const more = () => 3;\n";

/** A pack of `./index.js`, `./lib/helper.js` and `./lib/more.js`. */
async function writeMathPack(packs: string): Promise<void> {
  await Deno.mkdir(`${packs}/math/lib`, { recursive: true });
  await Deno.writeTextFile(
    `${packs}/math/package.json`,
    JSON.stringify({
      name: "math",
      version: "1.0.0",
      cordon: {
        exports: { ".": "./index.js" },
        internal: ["./lib/helper.js", "./lib/more.js"],
      },
    }),
  );
  await Deno.writeTextFile(
    `${packs}/math/index.js`,
    'import { helper } from "./lib/helper.js";\nexport { more } from "./lib/more.js";\nexport const two = helper();\n',
  );
  await Deno.writeTextFile(`${packs}/math/lib/more.js`, MORE);
  await Deno.writeTextFile(
    `${packs}/math/lib/helper.js`,
    "export const helper = () => 2;\n",
  );
}

/**
 * Starts a delivery server over `packs` in a process of its own, under
 * `flags`: a server whose only thread waits on a pipe answers nothing, so
 * the test asks it from outside, where its own time limit still runs. The
 * first time the server, once discovery is done, looks at the file at a
 * path ending in one of `swaps`' keys, the file is replaced by renaming the
 * value's over it: after the stat of a check that precedes a read, or
 * before the open that checks and reads.
 */
async function serverProcess(
  packs: string,
  flags: string[],
  swaps: Record<string, string>,
): Promise<{ url: string } & AsyncDisposable> {
  const script = `${packs}/../serve.js`;
  await Deno.writeTextFile(
    script,
    `import fs from "node:fs";
import { serveDelivery } from ${JSON.stringify(DELIVERY_MOD)};
const swaps = new Map(Object.entries(${JSON.stringify(swaps)}));
// Discovery opens files as delivery does: the swaps are delivery's.
let discovered = false;
function swapIn(path) {
  if (!discovered) return;
  for (const [end, from] of swaps) {
    if (!String(path).endsWith(end)) continue;
    swaps.delete(end);
    Deno.renameSync(from, path);
  }
}
const { statSync } = Deno;
Deno.statSync = (path) => {
  const info = statSync(path);
  swapIn(path);
  return info;
};
const { openSync } = fs;
fs.openSync = (path, ...rest) => {
  swapIn(path);
  return openSync(path, ...rest);
};
const server = await serveDelivery({ packsDir: ${
      JSON.stringify(packs)
    }, port: 0 });
discovered = true;
console.log(server.addr.port);
`,
  );
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-prompt", `--config=${DENO_JSON}`, ...flags, script],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const { value: port } = await lines.read();
  return {
    url: `http://127.0.0.1:${String(port).trim()}/api/sandbox-modules`,
    async [Symbol.asyncDispose]() {
      child.kill("SIGKILL");
      await lines.cancel();
      await child.status;
    },
  };
}

/** The error code of an answer, or its status when it is not a problem. */
async function answerCode(url: string): Promise<string> {
  // Bounds a server that answers nothing: the test then fails on the abort.
  const answer = await fetch(url, { signal: AbortSignal.timeout(20_000) });
  const body = await answer.text();
  return answer.ok ? String(answer.status) : JSON.parse(body).code;
}

for (const granted of ["--allow-read", "--allow-all"]) {
  // Deno 2.9.6 follows a link despite O_NOFOLLOW unless given every permission.
  Deno.test(`serveDelivery() under ${granted} refuses with PACK_FILE_CHANGED a module a pipe, a link to one, or a link out of the pack replaced just after its check, and goes on answering, where the read waited on the pipe and the server answered nothing`, async () => {
    const root = await Deno.makeTempDir({ prefix: "cordon_fifo_" });
    try {
      const packs = `${root}/packs`;
      await writeMathPack(packs);
      await Deno.writeTextFile(`${root}/outside.js`, MORE);
      await Deno.symlink(`${root}/outside.js`, `${root}/outside-link`);
      const made = await new Deno.Command("mkfifo", {
        args: [`${root}/pipe`, `${root}/linked-pipe`],
      }).output();
      assert.ok(made.success, "mkfifo");
      await Deno.symlink(`${root}/linked-pipe`, `${root}/link`);
      const flags = granted === "--allow-all"
        ? [granted]
        : [granted, `--allow-write=${root}`, "--allow-net=127.0.0.1"];
      await using server = await serverProcess(packs, flags, {
        "/math/index.js": `${root}/pipe`,
        "/math/lib/helper.js": `${root}/link`,
        "/math/lib/more.js": `${root}/outside-link`,
      });
      const listing = await fetch(server.url);
      const [pack] = (await listing.json()).packs;
      const idOf = new Map<string, string>(
        pack.modules.map((m: { path: string; id: string }) => [m.path, m.id]),
      );

      const index = `${server.url}/${idOf.get("./index.js")}`;
      const helper = `${server.url}/${idOf.get("./lib/helper.js")}`;
      assert.equal(await answerCode(index), "PACK_FILE_CHANGED");
      assert.equal(await answerCode(helper), "PACK_FILE_CHANGED");
      // The listed bytes, but outside the pack, reached by a link.
      const more = `${server.url}/${idOf.get("./lib/more.js")}`;
      assert.equal(await answerCode(more), "PACK_FILE_CHANGED");
      assert.equal(await answerCode(server.url), "200");
      const swapped = await Deno.lstat(`${packs}/math/index.js`);
      assert.ok(swapped.isFile === false && !swapped.isSymlink, "a pipe");
      assert.ok((await Deno.lstat(`${packs}/math/lib/helper.js`)).isSymlink);
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  });
}
