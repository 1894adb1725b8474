import assert from "node:assert/strict";
import { runServer } from "../cli/serve.ts";
import { serveDelivery } from "./serve.ts";
import { folderEntry, watchPacksFolder } from "./_watch.ts";
import { PrintedLines } from "./_test_lines_test.ts";

/** The shell moves deploy tools make; GNU `mv -T` is Linux's. */
const SHELL_MOVES = { ignore: Deno.build.os !== "linux" };

async function writePack(dir: string, name: string): Promise<void> {
  await Deno.mkdir(`${dir}/${name}`, { recursive: true });
  await Deno.writeTextFile(
    `${dir}/${name}/index.js`,
    `export default ${JSON.stringify(name)};\n`,
  );
  await Deno.writeTextFile(
    `${dir}/${name}/package.json`,
    JSON.stringify({
      name,
      version: "1.0.0",
      cordon: { exports: { ".": "./index.js" } },
    }),
  );
}

/** A temporary folder holding `packs` (pack `a`) and `packs.bak` (`a`, `b`). */
async function deployRoot(): Promise<
  { root: string; sh(command: string): Promise<void> } & AsyncDisposable
> {
  const root = await Deno.makeTempDir({ prefix: "cordon_watch_" });
  await writePack(`${root}/packs`, "a");
  await writePack(`${root}/packs.bak`, "a");
  await writePack(`${root}/packs.bak`, "b");
  return {
    root,
    async sh(command: string): Promise<void> {
      const { success, stderr } = await new Deno.Command("sh", {
        args: ["-c", command],
        cwd: root,
        stdout: "null",
        stderr: "piped",
      }).output();
      assert.ok(success, `${command}: ${new TextDecoder().decode(stderr)}`);
    },
    [Symbol.asyncDispose]: () => Deno.remove(root, { recursive: true }),
  };
}

/** Starts a watching server over `root/packs` whose hooks print lines. */
function watchingServer(packsDir: string, lines: PrintedLines) {
  return serveDelivery({
    packsDir,
    port: 0,
    watch: true,
    watchDebounceMs: 50,
    onRescan: (change) =>
      lines.print(
        `rescanned: added ${change.added.join(",")}; removed ${
          change.removed.join(",")
        }`,
      ),
    onRescanError: (error) =>
      lines.print(`rescan failed: ${(error as Error).message}`),
    onPacksLost: (error) => lines.print(`lost: ${error.name}`),
    onPacksFound: () => lines.print("found"),
  });
}

async function packNames(url: string): Promise<string[]> {
  const response = await fetch(url);
  assert.equal(response.status, 200);
  const listing = await response.json() as { packs: { name: string }[] };
  return listing.packs.map((pack) => pack.name).sort();
}

/** Polls the listing until it names exactly `names`, or fails at a deadline. */
async function untilPacks(
  url: string,
  names: string[],
  timeoutMs = 120_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let seen: string[] = [];
  while (Date.now() < deadline) {
    seen = await packNames(url);
    if (JSON.stringify(seen) === JSON.stringify(names)) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.deepEqual(seen, names, `the listing after ${timeoutMs} ms`);
}

/** Asserts that `expected` of the printed lines match `pattern`. */
function assertCount(
  lines: PrintedLines,
  pattern: RegExp,
  expected: number,
): void {
  assert.equal(
    lines.lines.filter((line) => pattern.test(line)).length,
    expected,
    lines.lines.join("\n"),
  );
}

Deno.test("folderEntry() splits a folder path into its parent and its name", () => {
  assert.deepEqual(folderEntry("packs"), { parent: ".", name: "packs" });
  assert.deepEqual(folderEntry("./packs/"), { parent: ".", name: "packs" });
  assert.deepEqual(folderEntry("/srv/app/packs//"), {
    parent: "/srv/app",
    name: "packs",
  });
  assert.deepEqual(folderEntry("/packs"), { parent: "/", name: "packs" });
  for (const path of ["/", ".", "..", "./", "a/..", "a/."]) {
    assert.equal(folderEntry(path), undefined, path);
  }
});

Deno.test({
  name:
    "serveDelivery() with watch keeps serving while the packs folder is deleted, says so, and serves the recreated one",
  ...SHELL_MOVES,
  async fn() {
    await using dir = await deployRoot();
    const lines = new PrintedLines();
    await using server = await watchingServer(`${dir.root}/packs`, lines);
    const listing = await (await fetch(server.url)).json();
    const moduleUrl = `${server.url}/${listing.packs[0].modules[0].id}`;
    // Bytes are read on demand; one read before is kept while the folder
    // is gone.
    assert.equal((await fetch(moduleUrl)).status, 200);

    await dir.sh("rm -rf packs");
    await lines.waitFor(/^lost: NotFound$/);
    assert.deepEqual(await packNames(server.url), ["a"]);
    const module = await fetch(moduleUrl);
    assert.equal(module.status, 200);
    assert.equal(await module.text(), 'export default "a";\n');

    await dir.sh("cp -a packs.bak packs");
    await lines.waitFor(/^found$/);
    await untilPacks(server.url, ["a", "b"]);
    // The recreated folder is the one watched now.
    await writePack(`${dir.root}/packs`, "c");
    await untilPacks(server.url, ["a", "b", "c"]);
    assertCount(lines, /^lost/, 1);
    assertCount(lines, /^found/, 1);
    assertCount(lines, /^rescan failed/, 0);
  },
});

Deno.test({
  name:
    "serveDelivery() with watch serves the packs of a folder replaced by rm -rf && cp -a, and watches the new one",
  ...SHELL_MOVES,
  async fn() {
    await using dir = await deployRoot();
    const lines = new PrintedLines();
    await using server = await watchingServer(`${dir.root}/packs`, lines);
    await dir.sh("rm -rf packs && cp -a packs.bak packs");
    await untilPacks(server.url, ["a", "b"]);
    await writePack(`${dir.root}/packs`, "c");
    await untilPacks(server.url, ["a", "b", "c"]);
    await dir.sh("rm -rf packs/a");
    await untilPacks(server.url, ["b", "c"]);
    assertCount(lines, /^rescan failed/, 0);
  },
});

Deno.test({
  name:
    "serveDelivery() with watch says when the packs folder is renamed away and back, and serves what changed meanwhile",
  ...SHELL_MOVES,
  async fn() {
    await using dir = await deployRoot();
    const lines = new PrintedLines();
    await using server = await watchingServer(`${dir.root}/packs`, lines);

    await dir.sh("mv packs packs.away");
    const { index: lostAt } = await lines.waitFor(/^lost: NotFound$/);
    await writePack(`${dir.root}/packs.away`, "d");
    assert.deepEqual(await packNames(server.url), ["a"]);

    await dir.sh("mv packs.away packs");
    await lines.waitFor(/^found$/, { from: lostAt });
    await untilPacks(server.url, ["a", "d"]);
    // Nothing was re-scanned while the folder was away.
    const between = lines.lines.slice(lostAt + 1);
    assert.equal(between[0], "found", lines.lines.join("\n"));
    await writePack(`${dir.root}/packs`, "e");
    await untilPacks(server.url, ["a", "d", "e"]);
    assertCount(lines, /^lost/, 1);
    assertCount(lines, /^rescan failed/, 0);
  },
});

Deno.test({
  name:
    "serveDelivery() with watch follows a packs symlink re-pointed to another release, both ways",
  ...SHELL_MOVES,
  async fn() {
    await using dir = await deployRoot();
    await dir.sh(
      "mkdir releases && mv packs releases/1 && mv packs.bak releases/2 && ln -s releases/1 packs",
    );
    const lines = new PrintedLines();
    await using server = await watchingServer(`${dir.root}/packs`, lines);
    assert.deepEqual(await packNames(server.url), ["a"]);

    await dir.sh("ln -sfn releases/2 packs.tmp && mv -T packs.tmp packs");
    await untilPacks(server.url, ["a", "b"]);
    await writePack(`${dir.root}/releases/2`, "c");
    await untilPacks(server.url, ["a", "b", "c"]);

    await dir.sh("ln -sfn releases/1 packs.tmp && mv -T packs.tmp packs");
    await untilPacks(server.url, ["a"]);
    await writePack(`${dir.root}/releases/1`, "f");
    await untilPacks(server.url, ["a", "f"]);
    // The path always led to a folder.
    assertCount(lines, /^(lost|found)/, 0);
    assertCount(lines, /^rescan failed/, 0);
  },
});

Deno.test({
  name:
    "watchPacksFolder() finds the folder again by polling when its parent was deleted too, and reports a file in its place as lost",
  ...SHELL_MOVES,
  async fn() {
    const root = await Deno.makeTempDir({ prefix: "cordon_watch_" });
    try {
      await writePack(`${root}/deploy/packs`, "a");
      const lines = new PrintedLines();
      let changes = 0;
      const watcher = watchPacksFolder(`${root}/deploy/packs`, {
        debounceMs: 20,
        pollMs: 50,
        onChange: () => {
          lines.print(`change ${++changes}`);
          return Promise.resolve();
        },
        onError: (error) => lines.print(`error: ${error}`),
        onLost: (error) => lines.print(`lost: ${error.name}: ${error.message}`),
        onFound: () => lines.print("found"),
      });
      try {
        await Deno.remove(`${root}/deploy`, { recursive: true });
        const lost = await lines.waitFor(/^lost: /);
        assert.equal(
          lost.line,
          "lost: NotFound: The packs folder cannot be read: NotFound",
        );
        await writePack(`${root}/deploy/packs`, "a");
        const found = await lines.waitFor(/^found$/);
        await lines.waitFor(/^change \d+$/, { from: found.index });

        await Deno.remove(`${root}/deploy/packs`, { recursive: true });
        await Deno.writeTextFile(`${root}/deploy/packs`, "not a folder");
        await lines.waitFor(/^lost: NotADirectory: /, { from: found.index });
        await Deno.remove(`${root}/deploy/packs`);
        await writePack(`${root}/deploy/packs`, "b");
        await lines.waitFor(/^found$/, { from: found.index + 1 });
      } finally {
        await watcher.close();
        await watcher.close();
      }
      // Closed, it reports nothing more.
      const printed = lines.lines.length;
      await writePack(`${root}/deploy/packs`, "c");
      await Deno.remove(`${root}/deploy`, { recursive: true });
      await new Promise((resolve) => setTimeout(resolve, 150));
      assert.equal(lines.lines.length, printed, lines.lines.join("\n"));
      assertCount(lines, /^error/, 0);
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "cli/serve.ts --watch logs one line when the packs folder is lost and one when it is found, naming no path",
  ...SHELL_MOVES,
  async fn() {
    await using dir = await deployRoot();
    const lines = new PrintedLines();
    const stop = new AbortController();
    const running = runServer(
      ["--packs", `${dir.root}/packs`, "--port", "0", "--watch", "--quiet"],
      { print: lines.print, printError: lines.print, signal: stop.signal },
    );
    try {
      await lines.waitFor(/^Press Ctrl-C to stop$/);
      await dir.sh("rm -rf packs");
      await lines.waitFor(
        /^Packs folder lost \(NotFound\): serving the last packs found until it is back$/,
      );
      await dir.sh("cp -a packs.bak packs");
      const found = await lines.waitFor(/^Packs folder found again$/);
      await lines.waitFor(/^Packs rescanned: added b@1\.0\.0$/, {
        from: found.index,
      });
    } finally {
      stop.abort();
      assert.equal(await running, 0);
    }
    const output = lines.lines.join("\n");
    assertCount(lines, /^Packs folder lost/, 1);
    assertCount(lines, /^Packs folder found/, 1);
    assertCount(lines, /rescan failed/, 0);
    assert.ok(!output.includes(dir.root), output);
    assert.ok(!output.includes(await Deno.realPath(dir.root)), output);
  },
});

/** Calls `write` until `done()` holds, or fails at a deadline. */
async function writeUntil(
  write: (round: number) => Promise<void>,
  done: () => boolean,
  what: string,
  timeoutMs = 120_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let round = 0; !done(); round++) {
    assert.ok(Date.now() < deadline, `${what} within ${timeoutMs} ms`);
    await write(round);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

Deno.test("watchPacksFolder() re-scans a folder that never stays quiet for the debounce time", async () => {
  const root = await Deno.makeTempDir({ prefix: "cordon_watch_" });
  try {
    await writePack(`${root}/packs`, "a");
    let changes = 0;
    const watcher = watchPacksFolder(`${root}/packs`, {
      debounceMs: 100,
      onChange: () => {
        changes++;
        return Promise.resolve();
      },
      onError: () => {},
      onLost: () => {},
      onFound: () => {},
    });
    try {
      // A log or editor file written every 10 ms: the folder is never quiet
      // for 100 ms, and a re-scan must come anyway.
      await writeUntil(
        (round) => Deno.writeTextFile(`${root}/packs/a/notes.txt`, `${round}`),
        () => changes > 0,
        "a re-scan while the folder keeps changing",
      );
    } finally {
      await watcher.close();
    }
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test({
  name:
    "watchPacksFolder() re-scans when a pack is added as a link to its release folder, which file events do not report",
  ...SHELL_MOVES,
  async fn() {
    await using dir = await deployRoot();
    await writePack(`${dir.root}/releases/c-1`, "c");
    const lines = new PrintedLines();
    let changes = 0;
    const watcher = watchPacksFolder(`${dir.root}/packs`, {
      debounceMs: 20,
      pollMs: 50,
      onChange: () => {
        lines.print(`change ${++changes}`);
        return Promise.resolve();
      },
      onError: (error) => lines.print(`error: ${error}`),
      onLost: (error) => lines.print(`lost: ${error.name}`),
      onFound: () => lines.print("found"),
    });
    try {
      await dir.sh("ln -s ../releases/c-1/c packs/c");
      await lines.waitFor(/^change 1$/);
    } finally {
      await watcher.close();
    }
    assertCount(lines, /^(error|lost|found)/, 0);
  },
});

Deno.test("watchPacksFolder() reports to onError what its handling of a change threw, here a hook, where it dropped it and carried on without a word", async () => {
  const root = await Deno.makeTempDir({ prefix: "cordon_watch_" });
  try {
    await writePack(`${root}/packs`, "a");
    const lines = new PrintedLines();
    const watcher = watchPacksFolder(`${root}/packs`, {
      debounceMs: 20,
      pollMs: 50,
      onChange: () => Promise.resolve(),
      onError: (error) => lines.print(`error: ${error}`),
      onLost: () => {
        lines.print("lost");
        throw new TypeError("the planted fault");
      },
      onFound: () => {},
    });
    try {
      await Deno.remove(`${root}/packs`, { recursive: true });
      await lines.waitFor(/^lost$/);
      // Calm: the report follows the hook at once; a run where it was
      // dropped waits here to the deadline.
      await lines.waitFor(/^error: TypeError: the planted fault$/, {
        timeoutMs: 20_000,
      });
    } finally {
      await watcher.close();
    }
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
