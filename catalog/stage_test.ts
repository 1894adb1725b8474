import assert from "node:assert/strict";
import fsPromises from "node:fs/promises";
import { pathToFileURL } from "node:url";
import {
  CordonError,
  StagedIndexSchema,
  stagedModulePath,
  stagedPackIndexPath,
} from "../protocol/mod.ts";
import { createDiskCatalog } from "./disk_catalog.ts";
import { planStagedTree, writeStagedTree } from "./stage.ts";
import { createStagedCatalog } from "./staged_catalog.ts";
import { readStagedIndex, verifyStagedTree } from "./verify_staged.ts";
import {
  copyTree,
  FIXTURE_PACKS,
  indexUrlOf,
  readTree,
  stageInto,
  tempDir,
} from "./_test_staged_tree_test.ts";

async function readIndex(dir: string) {
  return StagedIndexSchema.parse(
    JSON.parse(await Deno.readTextFile(`${dir}/index.json`)),
  );
}

async function greetModulePath(dir: string): Promise<string> {
  const index = await readIndex(dir);
  const greet = index.packs.find((entry) => entry.name === "greet")!;
  const pack = JSON.parse(
    await Deno.readTextFile(
      `${dir}/${stagedPackIndexPath(greet.name)}`,
    ),
  );
  const module = pack.modules[0];
  return stagedModulePath(module.id, module.digest);
}

async function codesOf(dir: string, previous?: string) {
  const report = await verifyStagedTree(
    dir,
    previous === undefined ? {} : { previous: await readStagedIndex(previous) },
  );
  return report.problems.map((problem) => [problem.code, problem.path]);
}

Deno.test("staging the same packs twice gives byte-identical trees", async () => {
  await using dir = await tempDir();
  const first = await readTree(await stageInto(FIXTURE_PACKS, dir.path, "a"));
  const second = await readTree(await stageInto(FIXTURE_PACKS, dir.path, "b"));
  assert.deepEqual([...first.keys()], [...second.keys()]);
  for (const [path, bytes] of first) {
    assert.deepEqual(second.get(path), bytes, path);
  }
  assert.equal(first.size, 4 + 10 + 3);
});

Deno.test("writeStagedTree() writes only the tree's files and folders, no folder beside a top-level file", async () => {
  await using dir = await tempDir();
  const out = await stageInto(FIXTURE_PACKS, dir.path, "tree");
  const top: string[] = [];
  for await (const entry of Deno.readDir(out)) {
    top.push(`${entry.name}${entry.isDirectory ? "/" : ""}`);
  }
  assert.deepEqual(top.sort(), [
    "_headers",
    "_nginx.conf",
    "index.json",
    "modules/",
    "packs/",
  ]);
});

Deno.test("a staged tree keeps the delivery contract: the disk catalog's ids, digests and bytes", async () => {
  await using dir = await tempDir();
  const out = await stageInto(FIXTURE_PACKS, dir.path);
  const disk = await createDiskCatalog(FIXTURE_PACKS);
  const index = await readIndex(out);
  assert.deepEqual(
    index.packs.map((entry) => [entry.name, entry.version, entry.graphDigest]),
    disk.summaries().map((pack) => [pack.name, pack.version, pack.graphDigest])
      .sort(),
  );
  for (const entry of index.packs) {
    const staged = JSON.parse(
      await Deno.readTextFile(
        `${out}/${stagedPackIndexPath(entry.name)}`,
      ),
    );
    const listed = disk.summaries().find((pack) => pack.name === entry.name)!;
    assert.deepEqual(
      staged.modules.map((m: { id: string }) => m.id).sort(),
      listed.modules.map((m) => m.id).sort(),
    );
    for (const module of listed.modules) {
      const delivery = await disk.authorizeDelivery(module.id);
      assert.equal(
        await Deno.readTextFile(
          `${out}/${stagedModulePath(module.id, module.digest)}`,
        ),
        delivery.ok && delivery.content,
      );
    }
  }
});

Deno.test("verifyStagedTree() finds no problem in a freshly staged tree", async () => {
  await using dir = await tempDir();
  const out = await stageInto(FIXTURE_PACKS, dir.path);
  const report = await verifyStagedTree(out);
  assert.deepEqual(report.problems, []);
  assert.equal(report.packs, 4);
  assert.equal(report.modules, 10);
});

Deno.test("planStagedTree(), writeStagedTree(), verifyStagedTree() and readStagedIndex() take file: URLs, as Deno's file APIs do, of folders whose paths hold a space, # and é", async () => {
  await using dir = await tempDir();
  const out = `${dir.path}/my staged #1 é`;
  const plan = await planStagedTree(pathToFileURL(FIXTURE_PACKS));
  await writeStagedTree(plan, pathToFileURL(out));
  const report = await verifyStagedTree(pathToFileURL(out));
  assert.deepEqual(report.problems, []);
  assert.equal(report.packs, 4);
  const index = await readStagedIndex(pathToFileURL(out));
  assert.equal(index.packs.length, 4);
  await assert.rejects(
    writeStagedTree(plan, new URL("https://example.com/staged")),
    new TypeError(
      "Cannot stage: outDir must be a folder path or a file: URL, not a https: URL",
    ),
  );
});

Deno.test("verifyStagedTree() reports a tampered module file", async () => {
  await using dir = await tempDir();
  const out = await stageInto(FIXTURE_PACKS, dir.path);
  const path = await greetModulePath(out);
  await Deno.writeTextFile(`${out}/${path}`, "export const greet = () => 1;\n");
  const report = await verifyStagedTree(out);
  assert.deepEqual(report.problems.map((p) => [p.code, p.path]), [
    ["STAGED_FILE_TAMPERED", path],
  ]);
  assert.match(report.problems[0]!.message, /of pack "greet" hashes to/);
});

Deno.test("verifyStagedTree() reports a missing module file", async () => {
  await using dir = await tempDir();
  const out = await stageInto(FIXTURE_PACKS, dir.path);
  const path = await greetModulePath(out);
  await Deno.remove(`${out}/${path}`);
  assert.deepEqual(await codesOf(out), [["STAGED_FILE_MISSING", path]]);
});

Deno.test("verifyStagedTree() reports an extra file, in any folder", async () => {
  await using dir = await tempDir();
  const out = await stageInto(FIXTURE_PACKS, dir.path);
  await Deno.writeTextFile(`${out}/modules/evil.js`, "alert(1);\n");
  await Deno.writeTextFile(`${out}/notes.txt`, "hello\n");
  assert.deepEqual(await codesOf(out), [
    ["STAGED_FILE_EXTRA", "modules/evil.js"],
    ["STAGED_FILE_EXTRA", "notes.txt"],
  ]);
});

Deno.test("verifyStagedTree() reports a tampered or missing headers file", async () => {
  await using dir = await tempDir();
  const out = await stageInto(FIXTURE_PACKS, dir.path);
  await Deno.writeTextFile(`${out}/_headers`, "/*\n  Cache-Control: none\n");
  await Deno.remove(`${out}/_nginx.conf`);
  assert.deepEqual(await codesOf(out), [
    ["STAGED_FILE_TAMPERED", "_headers"],
    ["STAGED_FILE_MISSING", "_nginx.conf"],
  ]);
});

Deno.test("verifyStagedTree() reports an index.json or headers file that starts with a byte order mark, as the staged catalog refuses to read it", async () => {
  await using dir = await tempDir();
  const out = await stageInto(FIXTURE_PACKS, dir.path);
  for (const file of ["index.json", "_headers"]) {
    const bytes = await Deno.readFile(`${out}/${file}`);
    await Deno.writeFile(
      `${out}/${file}`,
      new Uint8Array([0xef, 0xbb, 0xbf, ...bytes]),
    );
  }
  assert.deepEqual(await codesOf(out), [
    ["STAGED_FILE_TAMPERED", "_headers"],
    ["STAGED_INDEX_INVALID", "index.json"],
  ]);
  // What verify passes, the staged catalog reads.
  const catalog = createStagedCatalog({ indexUrl: indexUrlOf(out) });
  await assert.rejects(
    () => catalog.prefetch({ source: "", packages: ["greet"] }),
    (error: Error & { code?: string }) =>
      error.code === "FETCH_FAILED" &&
      /the body is not JSON/.test(error.message),
  );
});

Deno.test("verifyStagedTree() reports an index that disagrees with its pack index", async () => {
  await using dir = await tempDir();
  const out = await stageInto(FIXTURE_PACKS, dir.path);
  const index = await readIndex(out);
  const greet = index.packs.find((entry) => entry.name === "greet")!;
  greet.graphDigest = `sha256-${"A".repeat(43)}=`;
  await Deno.writeTextFile(`${out}/index.json`, JSON.stringify(index));
  const problems = (await verifyStagedTree(out)).problems;
  assert.deepEqual(problems.map((p) => [p.code, p.path]), [
    ["STAGED_INDEX_INVALID", stagedPackIndexPath(greet.name)],
  ]);
  assert.match(problems[0]!.message, /names another pack, version or graph/);
});

Deno.test("verifyStagedTree() reports a pack index whose ids or graph digests do not add up, even re-hashed", async () => {
  await using dir = await tempDir();
  const out = await stageInto(FIXTURE_PACKS, dir.path);
  const index = await readIndex(out);
  const math = index.packs.find((e) => e.name === "@cordon-fixtures/math")!;
  const oldPath = stagedPackIndexPath(math.name);
  const pack = JSON.parse(await Deno.readTextFile(`${out}/${oldPath}`));
  // A forger who edits a dependency and rewrites every digest it can.
  pack.modules[0].dependencyIds = [];
  const bytes = new TextEncoder().encode(JSON.stringify(pack));
  const { sha256Digest } = await import("./digest.ts");
  math.indexDigest = await sha256Digest(bytes);
  await Deno.remove(`${out}/${oldPath}`);
  await Deno.writeFile(
    `${out}/${stagedPackIndexPath(math.name)}`,
    bytes,
  );
  await Deno.writeTextFile(`${out}/index.json`, JSON.stringify(index));
  const problems = (await verifyStagedTree(out)).problems;
  assert.deepEqual(problems.map((p) => p.code), ["STAGED_INDEX_INVALID"]);
  assert.match(
    problems[0]!.message,
    /does not add up: the listed graph digest/,
  );
});

Deno.test("verifyStagedTree() reports an index.json that is not a staged index", async () => {
  await using dir = await tempDir();
  const out = await stageInto(FIXTURE_PACKS, dir.path);
  for (
    const index of [
      '{"packs": "no"}',
      // More wrong entries than a schema check can list.
      JSON.stringify({ packs: new Array(300_000).fill(1) }),
    ]
  ) {
    await Deno.writeTextFile(`${out}/index.json`, index);
    assert.deepEqual(await codesOf(out), [[
      "STAGED_INDEX_INVALID",
      "index.json",
    ]]);
  }
});

Deno.test("readStagedIndex() refuses a path it cannot read, a folder with no index and an index that is not one, each with its code and no path", async () => {
  await using dir = await tempDir();
  await Deno.writeTextFile(`${dir.path}/index.json`, "[]");
  await Deno.mkdir(`${dir.path}/empty`);
  const cases = [
    [
      `${dir.path}/nope`,
      "PATH_UNUSABLE",
      /^Cannot read the previous staged index: NotFound; /,
    ],
    [
      `${dir.path}/empty`,
      "STAGED_FILE_MISSING",
      /the folder has no index\.json/,
    ],
    [
      dir.path,
      "STAGED_INDEX_INVALID",
      /does not match the staged index schema/,
    ],
  ] as const;
  for (const [path, code, message] of cases) {
    const error = await readStagedIndex(path).then(() => undefined, (e) => e);
    assert.ok(error instanceof CordonError, path);
    assert.equal(error.code, code, path);
    assert.match(error.message, message, path);
    assert.equal(error.message.includes(dir.path), false, path);
  }
});

Deno.test("verifyStagedTree() refuses a folder it cannot list with PATH_UNUSABLE and no path, as readStagedIndex() does", async () => {
  await using dir = await tempDir();
  await Deno.writeTextFile(`${dir.path}/file`, "x");
  const cases = [
    [`${dir.path}/nope`, /^Cannot read the staged tree: NotFound; /],
    [`${dir.path}/file`, /^Cannot read the staged tree: NotADirectory; /],
  ] as const;
  for (const [path, message] of cases) {
    const error = await verifyStagedTree(path).then(() => undefined, (e) => e);
    assert.ok(error instanceof CordonError, path);
    assert.equal(error.code, "PATH_UNUSABLE", path);
    assert.match(error.message, message, path);
    assert.equal(error.message.includes(dir.path), false, path);
    assert.ok(error.cause instanceof Error, path);
  }
});

Deno.test("readStagedIndex() refuses an index that lists a pack twice, which would leave one of its entries unchecked", async () => {
  await using dir = await tempDir();
  const released = await stageInto(FIXTURE_PACKS, dir.path, "released");
  const index = await readIndex(released);
  const greet = index.packs.find((entry) => entry.name === "greet")!;
  const edited = `${dir.path}/edited.json`;
  await Deno.writeTextFile(
    edited,
    JSON.stringify({
      format: 1,
      packs: [
        ...index.packs,
        { ...greet, graphDigest: `sha256-${"A".repeat(43)}=` },
      ],
    }),
  );
  const error = await readStagedIndex(edited).then(() => undefined, (e) => e);
  assert.ok(error instanceof CordonError);
  assert.equal(error.code, "STAGED_INDEX_INVALID");
  assert.match(
    error.message,
    /^Cannot read the previous staged index: it lists pack "greet" twice or out of order; /,
  );
});

Deno.test("verifyStagedTree() with a previous index reports a pack changed without a new version", async (t) => {
  await using dir = await tempDir();
  const packs = `${dir.path}/packs`;
  await copyTree(FIXTURE_PACKS, packs);
  const released = await stageInto(packs, dir.path, "released");
  await Deno.writeTextFile(
    `${packs}/greet/index.js`,
    "export const greet = (name) => `Hi, ${name}!`;\n",
  );
  const changed = await stageInto(packs, dir.path, "changed");

  await t.step("the tree alone is sound", async () => {
    assert.deepEqual(await codesOf(changed), []);
  });
  await t.step("against the release before, greet is reported", async () => {
    const index = await readIndex(changed);
    const greet = index.packs.find((entry) => entry.name === "greet")!;
    assert.deepEqual(await codesOf(changed, released), [
      ["STAGED_PACK_CHANGED", stagedPackIndexPath(greet.name)],
    ]);
    assert.deepEqual(await codesOf(changed, `${released}/index.json`), [
      ["STAGED_PACK_CHANGED", stagedPackIndexPath(greet.name)],
    ]);
  });
  await t.step("with a new version number, nothing is reported", async () => {
    const manifest = JSON.parse(
      await Deno.readTextFile(`${packs}/greet/package.json`),
    );
    manifest.version = "1.0.1";
    await Deno.writeTextFile(
      `${packs}/greet/package.json`,
      JSON.stringify(manifest),
    );
    const bumped = await stageInto(packs, dir.path, "bumped");
    assert.deepEqual(await codesOf(bumped, released), []);
  });
});

Deno.test("verifyStagedTree() compares with the previous index as it was at the call, where a change to it while the tree was read changed the report", async () => {
  await using dir = await tempDir();
  const staged = await stageInto(FIXTURE_PACKS, dir.path, "staged");
  const index = await readStagedIndex(staged);
  const greet = index.packs.findIndex((entry) => entry.name === "greet");
  const released = index.packs[greet]!.graphDigest;
  const previous = structuredClone(index);
  previous.packs[greet]!.graphDigest = `sha256-${"A".repeat(43)}=`;
  const verifying = verifyStagedTree(staged, { previous });
  // The caller puts the released digest back once the call has begun.
  previous.packs[greet]!.graphDigest = released;
  const report = await verifying;
  assert.deepEqual(report.problems.map((problem) => problem.code), [
    "STAGED_PACK_CHANGED",
  ]);
});

Deno.test("verifyStagedTree() refuses a previous index that lists a pack twice, as readStagedIndex() does, where the last entry alone was compared", async () => {
  await using dir = await tempDir();
  const staged = await stageInto(FIXTURE_PACKS, dir.path, "staged");
  const index = await readStagedIndex(staged);
  const greet = index.packs.find((entry) => entry.name === "greet")!;
  const changed = { ...greet, graphDigest: `sha256-${"A".repeat(43)}=` };
  const previous = {
    ...index,
    packs: [...index.packs, changed, greet].sort((a, b) =>
      a.name < b.name ? -1 : a.name > b.name ? 1 : 0
    ),
  };
  await assert.rejects(() => verifyStagedTree(staged, { previous }), {
    name: "TypeError",
    message:
      "Cannot verify the staged tree: previous must be a staged index, as readStagedIndex returns",
  });
});

Deno.test("writeStagedTree() refuses a folder that is not empty, and planStagedTree() lists rejected packs", async () => {
  await using dir = await tempDir();
  const packs = `${dir.path}/packs`;
  await copyTree(FIXTURE_PACKS, packs);
  await Deno.mkdir(`${packs}/broken`);
  await Deno.writeTextFile(`${packs}/broken/package.json`, "{");
  const plan = await planStagedTree(packs);
  assert.deepEqual(plan.diagnostics.map((d) => [d.pack, d.code]), [
    ["broken", "PACK_MANIFEST_INVALID"],
  ]);
  assert.equal(plan.index.packs.length, 4);
  await Deno.writeTextFile(`${dir.path}/file.txt`, "x");
  await assert.rejects(
    () => writeStagedTree(plan, dir.path),
    (error: Error & { code?: string }) =>
      error.code === "STAGE_OUTPUT_NOT_EMPTY" &&
      !error.message.includes(dir.path),
  );
});

Deno.test("writeStagedTree() refuses an output folder it cannot write with PATH_UNUSABLE and no path", async () => {
  await using dir = await tempDir();
  const plan = await planStagedTree(FIXTURE_PACKS);
  await Deno.writeTextFile(`${dir.path}/file`, "x");
  for (
    const [out, message] of [
      [`${dir.path}/file`, /^Cannot write the staged tree: NotADirectory; /],
      [
        `${dir.path}/file/staged`,
        /^Cannot write the staged tree: NotADirectory; /,
      ],
      [
        `${dir.path}/${"a".repeat(300)}`,
        /^Cannot write the staged tree: ENAMETOOLONG; /,
      ],
    ] as const
  ) {
    const error = await writeStagedTree(plan, out).then(
      () => undefined,
      (e) => e,
    );
    assert.ok(error instanceof CordonError, out);
    assert.equal(error.code, "PATH_UNUSABLE", out);
    assert.match(error.message, message, out);
    assert.equal(error.message.includes(dir.path), false, out);
    assert.ok(error.cause instanceof Error, out);
  }
});

Deno.test({
  name:
    "writeStagedTree() on a full disk refuses with PATH_UNUSABLE and leaves no index.json and no temporary file",
  // A file size limit of zero stands for the full disk: every write fails
  // (EFBIG, SIGXFSZ ignored) as a write past the disk's room does.
  ignore: Deno.build.os !== "linux",
  async fn() {
    await using dir = await tempDir();
    const code = `
      import { planStagedTree, writeStagedTree } from "./catalog/stage.ts";
      const plan = await planStagedTree("./fixtures/packs");
      try {
        await writeStagedTree(plan, Deno.args[0]);
        console.log("written");
      } catch (error) {
        console.log(error.code + ": " + error.message);
      }`;
    const run = await new Deno.Command("sh", {
      args: [
        "-c",
        'trap "" XFSZ; ulimit -f 0; exec "$@"',
        "sh",
        Deno.execPath(),
        "eval",
        code,
        `${dir.path}/out`,
      ],
      cwd: new URL("../", import.meta.url),
      env: { NO_COLOR: "1" },
      stderr: "inherit",
    }).output();
    assert.match(
      new TextDecoder().decode(run.stdout),
      /^PATH_UNUSABLE: Cannot write the staged tree: EFBIG; /,
    );
    const left = await readTree(`${dir.path}/out`);
    assert.equal(left.has("index.json"), false);
    assert.deepEqual(
      [...left.keys()].filter((path) => path.endsWith(".tmp")),
      [],
    );
  },
});

Deno.test("writeStagedTree() refuses a plan whose file path leaves the output folder, or that is no plan, before it writes anything", async () => {
  await using dir = await tempDir();
  const plan = await planStagedTree(FIXTURE_PACKS);
  const bytes = new Uint8Array(1);
  const out = `${dir.path}/out/staged`;
  for (
    const path of [
      "../escaped.txt",
      "/abs.txt",
      "modules/../../x",
      "a//b",
      "./a",
      "a\\b",
      "",
    ]
  ) {
    const forged = { ...plan, files: new Map([...plan.files, [path, bytes]]) };
    await assert.rejects(() => writeStagedTree(forged, out), {
      name: "TypeError",
      message:
        /^Cannot stage into the output folder: plan must be a plan planStagedTree\(\) returned; /,
    }, path);
  }
  for (
    const notPlan of [null, 5, {}, { files: [] }, {
      files: new Map([["a", "x"]]),
    }]
  ) {
    await assert.rejects(() => writeStagedTree(notPlan as never, out), {
      name: "TypeError",
      message:
        /^Cannot stage into the output folder: plan must be a plan planStagedTree\(\) returned/,
    }, String(notPlan));
  }
  assert.deepEqual([...(await readTree(dir.path)).keys()], []);
});

Deno.test("writeStagedTree() refuses a folder inside the packs folder, also one reached through .. or a link, and writes nothing there", async () => {
  await using dir = await tempDir();
  const packs = `${dir.path}/packs`;
  await copyTree(FIXTURE_PACKS, packs);
  await Deno.symlink(packs, `${dir.path}/link`);
  const plan = await planStagedTree(packs);
  const before = [...(await readTree(packs)).keys()];
  for (
    const out of [
      `${packs}/staged`,
      `${packs}/greet/staged/`,
      `${dir.path}/elsewhere/../packs/new/staged`,
      `${dir.path}/link/staged`,
    ]
  ) {
    await assert.rejects(
      () => writeStagedTree(plan, out),
      (error: Error & { code?: string }) =>
        error.code === "STAGE_OUTPUT_INSIDE_PACKS" &&
        !error.message.includes(dir.path),
      out,
    );
  }
  assert.deepEqual([...(await readTree(packs)).keys()], before);
  // A name that only starts like the packs folder is outside it, and a
  // folder the path leaves with .. is not created.
  await writeStagedTree(plan, `${packs}-staged`);
  await writeStagedTree(plan, `${packs}/not-made/../../beside`);
  assert.ok((await Deno.stat(`${dir.path}/beside/index.json`)).isFile);
  assert.deepEqual([...(await readTree(packs)).keys()], before);
  assert.deepEqual(await codesOf(`${packs}-staged`), []);
});

Deno.test("verifyStagedTree() reports a module replaced by a symbolic link, even to the same bytes", async () => {
  await using dir = await tempDir();
  const out = await stageInto(FIXTURE_PACKS, dir.path);
  const path = await greetModulePath(out);
  await Deno.rename(`${out}/${path}`, `${dir.path}/outside.js`);
  await Deno.symlink(`${dir.path}/outside.js`, `${out}/${path}`);
  assert.deepEqual(await codesOf(out), [["STAGED_FILE_TAMPERED", path]]);
});

Deno.test("verifyStagedTree() reports a FIFO and an oversized file as tampered without reading them", async () => {
  await using dir = await tempDir();
  const out = await stageInto(FIXTURE_PACKS, dir.path);
  const fifo = await greetModulePath(out);
  await Deno.remove(`${out}/${fifo}`);
  const made = await new Deno.Command("mkfifo", { args: [`${out}/${fifo}`] })
    .output();
  assert.ok(made.success, "mkfifo");
  // A sparse file: 65 MiB long, no disk used.
  await Deno.truncate(`${out}/_nginx.conf`, 65 * 1024 * 1024);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stuck = new Promise<"stuck">((resolve) => {
    // Only a read blocked on the FIFO takes this long, however loaded the
    // machine.
    timer = setTimeout(() => resolve("stuck"), 120_000);
  });
  const report = await Promise.race([verifyStagedTree(out), stuck]);
  clearTimeout(timer);
  if (report === "stuck") {
    // Let the blocked read end before failing.
    (await Deno.open(`${out}/${fifo}`, { write: true })).close();
    assert.fail("verifyStagedTree() waited on the FIFO");
  }
  assert.deepEqual(
    report.problems.map((problem) => [problem.code, problem.path]),
    [["STAGED_FILE_TAMPERED", "_nginx.conf"], [
      "STAGED_FILE_TAMPERED",
      fifo,
    ]],
  );
  assert.match(report.problems[0]!.message, /larger than 67108864 bytes/);
  assert.match(report.problems[1]!.message, /not a regular file/);
});

Deno.test("verifyStagedTree() reports a module a named pipe replaced between its check and its open as tampered, without waiting on the pipe, where the open waited for a writer", async () => {
  await using dir = await tempDir();
  const out = await stageInto(FIXTURE_PACKS, dir.path);
  const fifo = await greetModulePath(out);
  const full = `${out}/${fifo}`;
  const { stat } = Deno;
  let swaps = 0;
  Deno.stat = async (...args: Parameters<typeof stat>) => {
    const info = await stat(...args);
    if (String(args[0]) === full && swaps++ === 0) {
      await Deno.remove(full);
      const made = await new Deno.Command("mkfifo", { args: [full] }).output();
      assert.ok(made.success, "mkfifo");
    }
    return info;
  };
  let timer: ReturnType<typeof setTimeout> | undefined;
  let report: Awaited<ReturnType<typeof verifyStagedTree>> | "stuck";
  try {
    const stuck = new Promise<"stuck">((resolve) => {
      // Only an open waiting on the pipe takes this long, however loaded
      // the machine.
      timer = setTimeout(() => resolve("stuck"), 120_000);
    });
    report = await Promise.race([verifyStagedTree(out), stuck]);
  } finally {
    clearTimeout(timer);
    Deno.stat = stat;
  }
  if (report === "stuck") {
    // Let the waiting open end before failing.
    (await Deno.open(full, { write: true })).close();
    assert.fail("verifyStagedTree() waited on the pipe until a writer came");
  }
  assert.equal(swaps, 1);
  assert.deepEqual(
    report.problems.map((problem) => [problem.code, problem.path]),
    [["STAGED_FILE_TAMPERED", fifo]],
  );
  assert.match(report.problems[0]!.message, /not a regular file/);
  assert.equal((await Deno.lstat(full)).isFifo, true);
});

Deno.test("planStagedTree() and verifyStagedTree() refuse a misspelt option and a previous that is no index", async () => {
  await assert.rejects(
    () => planStagedTree(FIXTURE_PACKS, { maxModuleByte: 1 } as never),
    {
      name: "TypeError",
      message:
        "Cannot plan the staged tree: unknown option maxModuleByte; did you mean maxModuleBytes?",
    },
  );
  await assert.rejects(
    () => verifyStagedTree("./nowhere", { previos: {} } as never),
    {
      name: "TypeError",
      message:
        "Cannot verify the staged tree: unknown option previos; did you mean previous?",
    },
  );
  await assert.rejects(
    () => verifyStagedTree("./nowhere", { previous: { packs: 1 } as never }),
    {
      name: "TypeError",
      message:
        "Cannot verify the staged tree: previous must be a staged index, as readStagedIndex returns",
    },
  );
});

Deno.test("writeStagedTree() writes index.json last, so a write that fails part-way (a full disk) leaves no tree a host would serve", async () => {
  await using dir = await tempDir();
  const plan = await planStagedTree(FIXTURE_PACKS);
  // A module path that is also a folder of another file cannot be written,
  // as no file can be on a full disk; the other files are written first.
  const stuck = "modules/zzzz.js";
  const failing = {
    ...plan,
    files: new Map([
      ...plan.files,
      [stuck, new Uint8Array(1)],
      [`${stuck}/inner`, new Uint8Array(1)],
    ]),
  };
  const out = `${dir.path}/staged`;
  await assert.rejects(writeStagedTree(failing, out));
  const written = await readTree(out);
  assert.equal(written.has("index.json"), false);
  assert.ok(written.size > 0);
});

/** A packs folder of `count` one-module packs, `p1` to `p<count>`, at `version`. */
async function writeManyPacks(
  packsDir: string,
  count: number,
  version = "1.0.0",
) {
  for (let i = 1; i <= count; i++) {
    await Deno.mkdir(`${packsDir}/p${i}`, { recursive: true });
    await Deno.writeTextFile(
      `${packsDir}/p${i}/package.json`,
      JSON.stringify({
        name: `p${i}`,
        version,
        type: "module",
        cordon: { exports: { ".": "./index.js" } },
      }),
    );
    await Deno.writeTextFile(
      `${packsDir}/p${i}/index.js`,
      `export const v = ${JSON.stringify(`${i} at ${version}`)};\n`,
    );
  }
}

Deno.test({
  name:
    "writeStagedTree() never leaves part of an index.json: a process ended while writing it leaves none",
  // prlimit sets the process's largest file size once its modules are
  // loaded; the kernel then ends it (SIGXFSZ) inside index.json, the one
  // file larger than the limit.
  ignore: Deno.build.os !== "linux",
  async fn() {
    await using dir = await tempDir();
    const packs = `${dir.path}/packs`;
    await writeManyPacks(packs, 100);
    const out = `${dir.path}/staged`;
    const limitBytes = 4096;
    const code = `
      import { planStagedTree, writeStagedTree } from "./catalog/stage.ts";
      const plan = await planStagedTree(Deno.args[0]);
      const limit = await new Deno.Command("prlimit", {
        args: ["--fsize=${limitBytes}", "--pid", String(Deno.pid)],
      }).output();
      if (!limit.success) Deno.exit(3);
      await writeStagedTree(plan, Deno.args[1]);`;
    const run = await new Deno.Command(Deno.execPath(), {
      args: ["eval", code, packs, out],
      cwd: new URL("../", import.meta.url),
      env: { NO_COLOR: "1" },
      stdout: "null",
      stderr: "null",
    }).output();
    assert.equal(run.signal, "SIGXFSZ");
    const written = await readTree(out);
    assert.ok(written.size > 200, "the modules were written before the end");
    assert.equal(written.has("index.json"), false);
  },
});

Deno.test("two writeStagedTree() calls into one empty folder at once: one writes its whole tree, which verifies, and the other refuses with STAGE_OUTPUT_NOT_EMPTY, having written nothing", async () => {
  await using dir = await tempDir();
  // The same pack names at other versions, so a tree mixed of both would
  // name modules and pack indexes of the other.
  const plans = [];
  for (const version of ["1.0.0", "2.0.0"]) {
    await writeManyPacks(`${dir.path}/${version}`, 20, version);
    plans.push(await planStagedTree(`${dir.path}/${version}`));
  }
  const out = `${dir.path}/staged`;
  const outcomes = await Promise.allSettled(
    plans.map((plan) => writeStagedTree(plan, out)),
  );
  const winner = outcomes.findIndex((outcome) =>
    outcome.status === "fulfilled"
  );
  const loser = outcomes[1 - winner];
  assert.equal(
    outcomes.filter((outcome) => outcome.status === "fulfilled").length,
    1,
  );
  assert.ok(loser?.status === "rejected");
  assert.ok(loser.reason instanceof CordonError, String(loser.reason));
  assert.equal(loser.reason.code, "STAGE_OUTPUT_NOT_EMPTY");
  assert.equal(loser.reason.message.includes(dir.path), false);
  assert.deepEqual(await codesOf(out), []);
  assert.deepEqual(await readTree(out), plans[winner]!.files);
});

Deno.test("writeStagedTree() refuses a plan whose bytes were transferred with BYTES_DETACHED, before it writes anything or, transferred while it writes, before index.json, where it answered PATH_UNUSABLE", async () => {
  await using dir = await tempDir();
  const moduleOf = (
    plan: { files: ReadonlyMap<string, Uint8Array<ArrayBuffer>> },
  ) => [...plan.files].find(([path]) => path.startsWith("modules/"))!;
  const before = await planStagedTree(FIXTURE_PACKS);
  const [path, bytes] = moduleOf(before);
  bytes.buffer.transfer();
  await assert.rejects(() => writeStagedTree(before, `${dir.path}/before`), {
    name: "CordonError",
    code: "BYTES_DETACHED",
    message:
      `Cannot write the staged tree's file ${path}: the bytes' ArrayBuffer was transferred or detached, so it holds no bytes; pass the bytes before transferring their buffer, or a copy`,
  });
  assert.deepEqual([...(await readTree(dir.path)).keys()], []);
  const during = await planStagedTree(FIXTURE_PACKS);
  const writing = writeStagedTree(during, `${dir.path}/during`);
  structuredClone(moduleOf(during)[1].buffer, {
    transfer: [moduleOf(during)[1].buffer],
  });
  await assert.rejects(writing, {
    name: "CordonError",
    code: "BYTES_DETACHED",
  });
  assert.equal((await readTree(dir.path)).has("during/index.json"), false);
});

Deno.test("writeStagedTree() writes the files it checked: one the caller adds to the plan while it writes is never written, outside the output folder or in it", async () => {
  await using dir = await tempDir();
  const plan = await planStagedTree(FIXTURE_PACKS);
  const files = new Map(plan.files);
  const writing = writeStagedTree({ ...plan, files }, `${dir.path}/out`);
  // Added once the paths were checked, before the first file is written.
  files.set("../escaped.txt", new Uint8Array(1));
  files.set("added.txt", new Uint8Array(1));
  await writing;
  const written = await readTree(dir.path);
  assert.equal(written.has("escaped.txt"), false);
  assert.equal(written.has("out/added.txt"), false);
  assert.equal(written.has("out/index.json"), true);
});

Deno.test({
  name:
    "verifyStagedTree() refuses a tree with a file it may not read with PATH_UNUSABLE and says to let it read the tree, not to pass another folder",
  // Root reads a file of any mode: the refusal cannot be made there.
  ignore: Deno.build.os === "windows" || Deno.uid() === 0,
  async fn() {
    await using dir = await tempDir();
    const out = await stageInto(FIXTURE_PACKS, dir.path);
    const module = [...(await readTree(out)).keys()].find((path) =>
      path.startsWith("modules/")
    )!;
    await Deno.chmod(`${out}/${module}`, 0o000);
    const error = await verifyStagedTree(out).then(() => undefined, (e) => e);
    await Deno.chmod(`${out}/${module}`, 0o644);
    assert.ok(error instanceof CordonError, String(error));
    assert.equal(error.code, "PATH_UNUSABLE");
    assert.equal(
      error.message,
      "Cannot read the staged tree: PermissionDenied; let this process read every file and folder of the tree: check their permissions",
    );
    assert.equal((await verifyStagedTree(out)).problems.length, 0);
  },
});

Deno.test("verifyStagedTree() names a file the system refuses to open PermissionDenied, as Deno's own open named it, and keeps the error as the cause", async () => {
  await using dir = await tempDir();
  const out = await stageInto(FIXTURE_PACKS, dir.path);
  const module = await greetModulePath(out);
  const { open } = fsPromises;
  const refusal = Object.assign(
    new Error(`EACCES: permission denied, open '${out}/${module}'`),
    { code: "EACCES" },
  );
  fsPromises.open =
    ((...args: Parameters<typeof open>) =>
      String(args[0]).endsWith(module)
        ? Promise.reject(refusal)
        : open(...args)) as typeof open;
  let error: unknown;
  try {
    error = await verifyStagedTree(out).then(() => undefined, (e) => e);
  } finally {
    fsPromises.open = open;
  }
  assert.ok(error instanceof CordonError, String(error));
  assert.equal(
    error.message,
    "Cannot read the staged tree: PermissionDenied; let this process read every file and folder of the tree: check their permissions",
  );
  assert.equal(error.cause, refusal);
});

Deno.test({
  name:
    "verifyStagedTree() refuses a tree with a file it cannot open (a link that leads to itself) with PATH_UNUSABLE and no path, where Deno's own error named the file's path",
  ignore: Deno.build.os === "windows",
  async fn() {
    await using dir = await tempDir();
    const out = await stageInto(FIXTURE_PACKS, dir.path);
    const module = [...(await readTree(out)).keys()].find((path) =>
      path.startsWith("modules/")
    )!;
    await Deno.remove(`${out}/${module}`);
    await Deno.symlink(`${out}/${module}`, `${out}/${module}`);
    const error = await verifyStagedTree(out).then(() => undefined, (e) => e);
    assert.ok(error instanceof CordonError, String(error));
    assert.equal(error.code, "PATH_UNUSABLE");
    assert.match(
      error.message,
      /^Cannot read the staged tree: FilesystemLoop; a link in the tree leads to itself: stage the packs again into an empty folder$/,
    );
    assert.equal(error.message.includes(dir.path), false);
    assert.ok(error.cause instanceof Error);
  },
});
