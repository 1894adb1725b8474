import assert from "node:assert/strict";
import fs from "node:fs";
import {
  createDiskCatalog,
  type DiskCatalog,
  type IndexWarningInfo,
} from "./disk_catalog.ts";
import { deliveryAuthorizer } from "./in_memory_delivery.ts";
import type { PackSummary } from "../protocol/mod.ts";
import { unhandledDuring } from "../protocol/_test_unhandled_test.ts";

interface Folder extends AsyncDisposable {
  packs: string;
  index: string;
}

async function folder(): Promise<Folder> {
  const root = await Deno.makeTempDir({ prefix: "cordon_index_" });
  await Deno.mkdir(`${root}/packs`);
  return {
    packs: `${root}/packs`,
    index: `${root}/index.ndjson`,
    async [Symbol.asyncDispose]() {
      await Deno.remove(root, { recursive: true });
    },
  };
}

const FILES: Record<string, string> = {
  "./index.js":
    'import { helper } from "./lib/helper.js";\nexport default helper();\n',
  "./lib/helper.js": "export const helper = () => 42;\n",
};

async function writePack(
  packs: string,
  name: string,
  files: Record<string, string> = FILES,
): Promise<void> {
  await Deno.mkdir(`${packs}/${name}/lib`, { recursive: true });
  await Deno.writeTextFile(
    `${packs}/${name}/package.json`,
    JSON.stringify({
      name,
      version: "1.0.0",
      cordon: {
        exports: { ".": "./index.js" },
        internal: Object.keys(files).filter((file) => file !== "./index.js"),
      },
    }),
  );
  for (const [file, text] of Object.entries(files)) {
    await Deno.writeTextFile(`${packs}/${name}/${file.slice(2)}`, text);
  }
}

/**
 * Counts the files discovery reads and the SHA-256 hashes it computes while
 * `fn` runs.
 */
async function counted<T>(
  fn: () => Promise<T>,
): Promise<{ value: T; reads: number; hashes: number }> {
  const { openSync, readFileSync } = Deno;
  const nodeOpenSync = fs.openSync;
  const nodeCrypto = process.getBuiltinModule("node:crypto") as {
    createHash: (...args: unknown[]) => unknown;
  };
  const { createHash } = nodeCrypto;
  let reads = 0;
  let hashes = 0;
  // Discovery opens each file it reads; a delivery opens it through
  // node:fs, and the index is read whole.
  Deno.openSync = (...args: Parameters<typeof openSync>) => {
    reads++;
    return openSync(...args);
  };
  fs.openSync = (...args: Parameters<typeof nodeOpenSync>) => {
    reads++;
    return nodeOpenSync(...args);
  };
  Deno.readFileSync = (...args: Parameters<typeof readFileSync>) => {
    reads++;
    return readFileSync(...args);
  };
  nodeCrypto.createHash = (...args: unknown[]) => {
    hashes++;
    return createHash.apply(nodeCrypto, args);
  };
  try {
    return { value: await fn(), reads, hashes };
  } finally {
    Object.assign(Deno, { openSync, readFileSync });
    fs.openSync = nodeOpenSync;
    nodeCrypto.createHash = createHash;
  }
}

/**
 * Runs `fn` with `Date.now()` five seconds ahead, so a discovery in it
 * counts every file written before as older than the racy window (tests
 * cannot wait for files to age).
 */
async function later<T>(fn: () => Promise<T>): Promise<T> {
  const now = Date.now;
  Date.now = () => now() + 5000;
  try {
    return await fn();
  } finally {
    Date.now = now;
  }
}

function open(
  dir: Folder,
  warnings: IndexWarningInfo[] = [],
): Promise<DiskCatalog> {
  return createDiskCatalog(dir.packs, {
    indexPath: dir.index,
    onIndexWarning: (warning) => warnings.push(warning),
  });
}

function names(summaries: PackSummary[]): string[] {
  return summaries.map((pack) => pack.name);
}

async function deliveredText(
  catalog: DiskCatalog,
  id: string,
): Promise<string> {
  const delivery = await catalog.authorizeDelivery(id);
  assert.equal(delivery.ok, true, JSON.stringify(delivery));
  return delivery.ok ? delivery.content : "";
}

Deno.test("createDiskCatalog() with indexPath restarts over an unchanged folder without reading or hashing a pack file", async () => {
  await using dir = await folder();
  await writePack(dir.packs, "a");
  await writePack(dir.packs, "@scope/b");
  const first = await counted(() => later(() => open(dir)));
  assert.equal(first.value.diagnostics().length, 0);
  assert.equal(first.reads, 6, "the first start reads every file");
  assert.ok(first.hashes > 0);
  assert.ok((await Deno.stat(dir.index)).isFile);

  const warnings: IndexWarningInfo[] = [];
  const again = await counted(() => open(dir, warnings));
  assert.equal(again.reads, 0);
  assert.equal(again.hashes, 0);
  assert.deepEqual(warnings, []);
  assert.deepEqual(again.value.summaries(), first.value.summaries());
  assert.deepEqual(again.value.diagnostics(), []);
  // What it delivers is read now and checked, never taken from the index.
  const id = again.value.summaries()[0]!.modules[0]!.id;
  assert.equal(await deliveredText(again.value, id), FILES["./index.js"]);
});

Deno.test("createDiskCatalog() with indexPath removes the temporary files of index writes that a dead process left, and nothing else, not another server's write in flight", async () => {
  await using dir = await folder();
  await writePack(dir.packs, "a");
  const left = `${dir.index}.${crypto.randomUUID()}.tmp`;
  // Another server's write in flight: a temporary file written just now.
  const writing = `${dir.index}.${crypto.randomUUID()}.tmp`;
  const kept = [`${dir.index}.backup`, `${dir.index}.not-a-uuid.tmp`, writing];
  for (const path of [left, ...kept]) await Deno.writeTextFile(path, "{");
  const hourAgo = new Date(Date.now() - 3_600_000);
  await Deno.utime(left, hourAgo, hourAgo);
  const warnings: IndexWarningInfo[] = [];
  await open(dir, warnings);
  assert.deepEqual(warnings, []);
  assert.ok((await Deno.stat(dir.index)).isFile);
  await assert.rejects(Deno.stat(left), Deno.errors.NotFound);
  for (const path of kept) assert.ok((await Deno.stat(path)).isFile, path);
});

Deno.test("createDiskCatalog() with indexPath reads a file again that changed with the same size", async () => {
  await using dir = await folder();
  await writePack(dir.packs, "a");
  const first = await later(() => open(dir));
  const before = first.summaries()[0]!;
  const changed = "export const helper = () => 43;\n";
  assert.equal(changed.length, FILES["./lib/helper.js"]!.length);
  const path = `${dir.packs}/a/lib/helper.js`;
  const { mtime } = await Deno.stat(path);
  await Deno.writeTextFile(path, changed);
  // The kernel's clock moves in ticks: a write within one of the first
  // could keep its time. Ten seconds earlier is another time, and one no
  // racy rule doubts, so only the time the index holds can tell.
  const earlier = new Date(mtime!.getTime() - 10_000);
  await Deno.utime(path, earlier, earlier);

  const again = await counted(() => open(dir));
  assert.equal(again.reads, 3, "the changed pack is read whole again");
  const after = again.value.summaries()[0]!;
  assert.notEqual(after.graphDigest, before.graphDigest);
  const helper = after.modules.find((m) => m.path === "./lib/helper.js")!;
  assert.equal(await deliveredText(again.value, helper.id), changed);
});

Deno.test("createDiskCatalog() with indexPath does not trust a file whose times are within two seconds of the scan that indexed it", async () => {
  await using dir = await folder();
  await writePack(dir.packs, "a");
  const path = `${dir.packs}/a/lib/helper.js`;
  // Indexed at once: the files are as new as the scan.
  await open(dir);
  const { mtime } = await Deno.stat(path);
  // Same size, and the modification time put back: only the racy rule
  // (and, in another second, the status change time) can tell.
  const changed = "export const helper = () => 44;\n";
  await Deno.writeTextFile(path, changed);
  await Deno.utime(path, mtime!, mtime!);

  const again = await counted(() => open(dir));
  assert.equal(again.reads, 3);
  const helper = again.value.summaries()[0]!.modules.find((m) =>
    m.path === "./lib/helper.js"
  )!;
  assert.equal(await deliveredText(again.value, helper.id), changed);
});

Deno.test("createDiskCatalog() with indexPath reads only the packs added, renamed or changed, and drops the removed ones", async (t) => {
  await using dir = await folder();
  for (const name of ["a", "b", "c", "d"]) await writePack(dir.packs, name);
  await later(() => open(dir));

  await t.step("a pack added is read, the others are not", async () => {
    await writePack(dir.packs, "e");
    const { value, reads } = await counted(() => later(() => open(dir)));
    assert.equal(reads, 3);
    assert.deepEqual(names(value.summaries()), ["a", "b", "c", "d", "e"]);
  });

  await t.step("a pack removed is gone, nothing is read", async () => {
    await Deno.remove(`${dir.packs}/e`, { recursive: true });
    const { value, reads } = await counted(() => later(() => open(dir)));
    assert.equal(reads, 0);
    assert.deepEqual(names(value.summaries()), ["a", "b", "c", "d"]);
  });

  await t.step("a pack folder renamed is read under its new name", async () => {
    await Deno.rename(`${dir.packs}/d`, `${dir.packs}/dd`);
    const { value, reads } = await counted(() => later(() => open(dir)));
    assert.equal(reads, 1, "only its package.json: its name is wrong now");
    assert.deepEqual(names(value.summaries()), ["a", "b", "c"]);
    assert.deepEqual(value.diagnostics().map((d) => [d.pack, d.code]), [
      ["dd", "PACK_MANIFEST_INVALID"],
    ]);
  });

  await t.step("a file renamed and the manifest with it is read", async () => {
    await Deno.remove(`${dir.packs}/dd`, { recursive: true });
    await Deno.remove(`${dir.packs}/c`, { recursive: true });
    await writePack(dir.packs, "c", {
      "./index.js":
        'import { helper } from "./lib/util.js";\nexport default helper();\n',
      "./lib/util.js": FILES["./lib/helper.js"]!,
    });
    const { value, reads } = await counted(() => later(() => open(dir)));
    assert.equal(reads, 3);
    const c = value.summaries().find((pack) => pack.name === "c")!;
    assert.deepEqual(c.modules.map((m) => m.path), [
      "./index.js",
      "./lib/util.js",
    ]);
  });

  await t.step("a file removed rejects its pack", async () => {
    await Deno.remove(`${dir.packs}/b/lib/helper.js`);
    const { value, reads } = await counted(() => later(() => open(dir)));
    assert.equal(reads, 2, "package.json and the file that is still there");
    assert.deepEqual(names(value.summaries()), ["a", "c"]);
    assert.deepEqual(value.diagnostics().map((d) => [d.pack, d.code]), [
      ["b", "PACK_FILE_MISSING"],
    ]);
  });

  await t.step(
    "a rejection is reused while its files are unchanged",
    async () => {
      await Deno.writeTextFile(`${dir.packs}/b/lib/helper.js`, "export {");
      const first = await counted(() => later(() => open(dir)));
      assert.deepEqual(first.value.diagnostics().map((d) => [d.pack, d.code]), [
        ["b", "PACK_MODULE_SYNTAX"],
      ]);
      const again = await counted(() => later(() => open(dir)));
      assert.equal(again.reads, 0);
      assert.deepEqual(again.value.diagnostics(), first.value.diagnostics());
    },
  );
});

Deno.test("createDiskCatalog() with indexPath ignores a damaged or foreign index with a warning, reads every pack and writes it again", async (t) => {
  await using dir = await folder();
  await writePack(dir.packs, "a");
  const good = await later(() => open(dir));
  const written = await Deno.readTextFile(dir.index);
  const [header, ...lines] = written.trimEnd().split("\n");
  const cases: [string, string, RegExp][] = [
    ["not JSON", "\u0000garbage", /first line is not JSON/],
    [
      "cut short",
      written.slice(0, written.length - 20),
      /line 2 is not UTF-8 JSON text \(a damaged file\)/,
    ],
    [
      "another format",
      [JSON.stringify({ ...JSON.parse(header!), format: 2 }), ...lines].join(
        "\n",
      ),
      /format 2, and this version reads format 1/,
    ],
    [
      "other rules",
      [JSON.stringify({ ...JSON.parse(header!), rules: "x" }), ...lines].join(
        "\n",
      ),
      /other discovery rules/,
    ],
    [
      "a path that leaves the pack",
      written.replace('"./lib/helper.js"', '"./../b/helper.js"'),
      /line 2 does not match the discovery index schema/,
    ],
    [
      "a digest that is a number",
      written.replace(/"sha256-[^"]+"/, "42"),
      /line 2 does not match the discovery index schema/,
    ],
    [
      "a module id that is a path",
      written.replace(/("\.\/index\.js",)"[^"]+"/, '$1"../x"'),
      /line 2 does not match the discovery index schema/,
    ],
    [
      "a field too many",
      written.replace('"folder":', '"extra":1,"folder":'),
      /line 2 does not match the discovery index schema/,
    ],
  ];
  for (const [what, text, why] of cases) {
    await t.step(what, async () => {
      await Deno.writeTextFile(dir.index, text);
      const warnings: IndexWarningInfo[] = [];
      const { value, reads } = await counted(() =>
        later(() => open(dir, warnings))
      );
      assert.equal(reads, 3);
      assert.equal(warnings.length, 1);
      assert.equal(warnings[0]!.code, "DISCOVERY_INDEX_IGNORED");
      assert.match(warnings[0]!.message, why);
      assert.equal(warnings[0]!.message.includes(dir.index), false);
      assert.deepEqual(value.summaries(), good.summaries());
      assert.equal(
        await Deno.readTextFile(dir.index),
        written.replace(
          /"scannedAt":\d+/,
          (await Deno.readTextFile(dir.index)).match(/"scannedAt":\d+/)![0],
        ),
      );
    });
  }

  await t.step("another maxModuleBytes", async () => {
    const warnings: IndexWarningInfo[] = [];
    await createDiskCatalog(dir.packs, {
      indexPath: dir.index,
      maxModuleBytes: 4096,
      onIndexWarning: (warning) => warnings.push(warning),
    });
    assert.deepEqual(warnings.map((w) => w.code), ["DISCOVERY_INDEX_IGNORED"]);
    assert.match(warnings[0]!.message, /another maxModuleBytes/);
  });
});

Deno.test("createDiskCatalog() with indexPath reads every pack again over an index of the rules before U+2028 and assert imports were decided", async () => {
  await using dir = await folder();
  await writePack(dir.packs, "a", {
    "./index.js": 'export default "line\u2028separator";\n',
  });
  await later(() => open(dir));
  // The index as cordon-discovery-5 wrote it: the parser of those rules
  // read a U+2028 inside a string as a line break and rejected the pack.
  const [header, line] = (await Deno.readTextFile(dir.index)).trimEnd().split(
    "\n",
  );
  const older = {
    ...JSON.parse(line!),
    outcome: {
      ok: false,
      name: "a",
      diagnostic: {
        pack: "a",
        code: "PACK_MODULE_SYNTAX",
        message:
          'Cannot use pack "a": ./index.js cannot be read as an ES module near line 1; fix the module\'s syntax',
      },
    },
  };
  await Deno.writeTextFile(
    dir.index,
    [
      JSON.stringify({ ...JSON.parse(header!), rules: "cordon-discovery-5" }),
      JSON.stringify(older),
      "",
    ].join("\n"),
  );

  const warnings: IndexWarningInfo[] = [];
  const again = await later(() => open(dir, warnings));
  assert.deepEqual(names(again.summaries()), ["a"]);
  assert.deepEqual(again.diagnostics(), []);
  assert.deepEqual(warnings.map((w) => w.code), ["DISCOVERY_INDEX_IGNORED"]);
  assert.match(warnings[0]!.message, /other discovery rules/);
});

Deno.test("createDiskCatalog() with indexPath reads an index line longer than its read buffer and the lines after it", async () => {
  await using dir = await folder();
  await writePack(dir.packs, "a");
  const first = await later(() => open(dir));
  const [header, ...lines] = (await Deno.readTextFile(dir.index)).trimEnd()
    .split("\n");
  // A rejected folder no longer there, whose message is 3 MB long.
  const long = JSON.stringify({
    folder: "gone",
    files: [["package.json", 2, 0, null, null, null]],
    outcome: {
      ok: false,
      diagnostic: { pack: "gone", code: "X", message: "é".repeat(1_500_000) },
    },
  });
  await Deno.writeTextFile(
    dir.index,
    [header, long, ...lines].join("\n") + "\n",
  );
  const warnings: IndexWarningInfo[] = [];
  const again = await counted(() => later(() => open(dir, warnings)));
  assert.deepEqual(warnings, []);
  assert.equal(again.reads, 0, "the line after the long one proved pack a");
  assert.deepEqual(again.value.summaries(), first.summaries());
});

Deno.test("createDiskCatalog() with indexPath ignores an index with a line longer than any it writes, without holding that line in memory", async () => {
  await using dir = await folder();
  await writePack(dir.packs, "a");
  await later(() => open(dir));
  const header = (await Deno.readTextFile(dir.index)).split("\n")[0]!;
  await Deno.writeTextFile(dir.index, header + "\n");
  // A second line of 1 GiB of zero bytes and no newline, as in a file
  // damaged on disk or another large file named by mistake; sparse, so it
  // takes no room on disk.
  await Deno.truncate(dir.index, header.length + 1 + 2 ** 30);
  const before = Deno.memoryUsage().rss;
  const warnings: IndexWarningInfo[] = [];
  const again = await counted(() => later(() => open(dir, warnings)));
  const grownBytes = Deno.memoryUsage().rss - before;
  assert.deepEqual(warnings.map((w) => w.code), ["DISCOVERY_INDEX_IGNORED"]);
  assert.match(
    warnings[0]!.message,
    /line 2 is longer than 64 MiB, more than any line discovery writes/,
  );
  assert.equal(again.reads, 3);
  // Reading the line whole took its bytes and a buffer twice their size.
  assert.ok(grownBytes < 512 * 2 ** 20, `${grownBytes} bytes grown`);
});

Deno.test("createDiskCatalog() with indexPath ignores an index that is not UTF-8", async () => {
  await using dir = await folder();
  await writePack(dir.packs, "a");
  await later(() => open(dir));
  const bytes = await Deno.readFile(dir.index);
  const at = new TextDecoder().decode(bytes).indexOf('"version"');
  bytes[at + 1] = 0xff;
  await Deno.writeFile(dir.index, bytes);
  const warnings: IndexWarningInfo[] = [];
  const again = await counted(() => later(() => open(dir, warnings)));
  assert.deepEqual(warnings.map((w) => w.code), ["DISCOVERY_INDEX_IGNORED"]);
  assert.match(
    warnings[0]!.message,
    /line 2 is not UTF-8 JSON text \(a damaged file\)/,
  );
  assert.equal(again.reads, 3);
  assert.equal(again.value.summaries().length, 1);
});

Deno.test("createDiskCatalog() with indexPath never delivers bytes by an index's word: a digest changed in the index is refused", async () => {
  await using dir = await folder();
  await writePack(dir.packs, "a");
  const first = await later(() => open(dir));
  const helper = first.summaries()[0]!.modules.find((m) =>
    m.path === "./lib/helper.js"
  )!;
  const other = "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=";
  const text = await Deno.readTextFile(dir.index);
  assert.ok(text.includes(helper.digest));
  await Deno.writeTextFile(dir.index, text.replace(helper.digest, other));

  const again = await open(dir);
  const delivery = await again.authorizeDelivery(helper.id);
  assert.equal(delivery.ok, false);
  assert.equal(!delivery.ok && delivery.code, "PACK_FILE_CHANGED");
  const resolution = again.resolveForExecution({
    source: 'import a from "a"; export default a;',
    packages: ["a"],
  });
  assert.equal(resolution.statuses[0]!.status, "unavailable");
  assert.deepEqual(resolution.modules, {});
});

Deno.test("createDiskCatalog() with an index it cannot write warns and serves", async (t) => {
  await using dir = await folder();
  await writePack(dir.packs, "a");
  const places: [string, string, string[]][] = [
    ["a folder that does not exist", `${dir.packs}/../missing/index.ndjson`, [
      "DISCOVERY_INDEX_UNWRITABLE",
    ]],
    // Not even readable there: it says so too.
    ["a path under a file", `${dir.packs}/a/package.json/index.ndjson`, [
      "DISCOVERY_INDEX_IGNORED",
      "DISCOVERY_INDEX_UNWRITABLE",
    ]],
  ];
  for (const [what, indexPath, codes] of places) {
    await t.step(what, async () => {
      const warnings: IndexWarningInfo[] = [];
      const catalog = await createDiskCatalog(dir.packs, {
        indexPath,
        onIndexWarning: (warning) => warnings.push(warning),
      });
      assert.deepEqual(names(catalog.summaries()), ["a"]);
      assert.deepEqual(warnings.map((w) => w.code), codes);
      for (const { message } of warnings) {
        assert.equal(message.includes(dir.packs), false);
      }
      const files = [];
      for await (const entry of Deno.readDir(`${dir.packs}/..`)) {
        files.push(entry.name);
      }
      assert.deepEqual(files, ["packs"], "no temporary file is left");
    });
  }
});

Deno.test("createDiskCatalog() serves when onIndexWarning throws or rejects, and leaves the rejection handled", async () => {
  await using dir = await folder();
  await writePack(dir.packs, "a");
  const indexPath = `${dir.packs}/a/package.json/index.ndjson`;
  const codes: string[] = [];
  const sinks = {
    throws: (warning: IndexWarningInfo) => {
      codes.push(warning.code);
      throw new Error("log sink down");
    },
    rejects: (warning: IndexWarningInfo) => {
      codes.push(warning.code);
      return Promise.reject(new Error("log sink down")) as never;
    },
  };
  for (const [name, onIndexWarning] of Object.entries(sinks)) {
    codes.length = 0;
    let catalog: DiskCatalog | undefined;
    const unhandled = await unhandledDuring(async () => {
      catalog = await createDiskCatalog(dir.packs, {
        indexPath,
        onIndexWarning,
      });
    });
    assert.deepEqual(unhandled, [], name);
    assert.deepEqual(names(catalog!.summaries()), ["a"], name);
    assert.deepEqual(
      codes,
      ["DISCOVERY_INDEX_IGNORED", "DISCOVERY_INDEX_UNWRITABLE"],
      name,
    );
  }
});

Deno.test("createDiskCatalog() with indexPath neither reads nor replaces a path that is not a regular file", async (t) => {
  await using dir = await folder();
  await writePack(dir.packs, "a");
  const warned = async () => {
    const warnings: IndexWarningInfo[] = [];
    const catalog = await createDiskCatalog(dir.packs, {
      indexPath: dir.index,
      onIndexWarning: (warning) => warnings.push(warning),
    });
    assert.deepEqual(names(catalog.summaries()), ["a"]);
    assert.deepEqual(warnings.map((w) => w.code), [
      "DISCOVERY_INDEX_IGNORED",
      "DISCOVERY_INDEX_UNWRITABLE",
    ]);
    for (const { message } of warnings) {
      assert.match(message, /it is not a regular file/);
    }
  };

  await t.step("a link to /dev/null stays a link to it", async () => {
    // Renaming the new index over the path would replace what it names:
    // for a server run as root with --index /dev/null, the device itself.
    await Deno.symlink("/dev/null", dir.index);
    try {
      await warned();
      assert.equal((await Deno.lstat(dir.index)).isSymlink, true);
      assert.equal(await Deno.readLink(dir.index), "/dev/null");
    } finally {
      await Deno.remove(dir.index);
    }
  });

  await t.step(
    "a named pipe is not opened, which waits for a writer",
    async () => {
      const made = await new Deno.Command("mkfifo", { args: [dir.index] })
        .output();
      assert.equal(made.success, true);
      try {
        await warned();
        assert.equal((await Deno.lstat(dir.index)).isFifo, true);
      } finally {
        await Deno.remove(dir.index);
      }
    },
  );
});

Deno.test("createDiskCatalog() with indexPath reads no named pipe put in place of the index between its check and its open, where the open waited for a writer", async () => {
  await using dir = await folder();
  await writePack(dir.packs, "a");
  await Deno.writeTextFile(dir.index, "an index\n");
  const { stat } = Deno;
  let swaps = 0;
  Deno.stat = async (...args: Parameters<typeof stat>) => {
    const info = await stat(...args);
    if (String(args[0]) === dir.index && swaps++ === 0) {
      await Deno.remove(dir.index);
      const made = await new Deno.Command("mkfifo", { args: [dir.index] })
        .output();
      assert.equal(made.success, true);
    }
    return info;
  };
  const warnings: IndexWarningInfo[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const stuck = new Promise<"stuck">((resolve) => {
      // Only an open waiting on the pipe takes this long, however loaded
      // the machine.
      timer = setTimeout(() => resolve("stuck"), 120_000);
    });
    const catalog = await Promise.race([
      createDiskCatalog(dir.packs, {
        indexPath: dir.index,
        onIndexWarning: (warning) => warnings.push(warning),
      }),
      stuck,
    ]);
    if (catalog === "stuck") {
      // Let the waiting open end before failing.
      (await Deno.open(dir.index, { write: true })).close();
      assert.fail("discovery waited on the pipe until a writer came");
    }
    assert.deepEqual(names(catalog.summaries()), ["a"]);
  } finally {
    clearTimeout(timer);
    Deno.stat = stat;
  }
  assert.equal(swaps > 0, true);
  assert.deepEqual(warnings.map((w) => w.code), [
    "DISCOVERY_INDEX_IGNORED",
    "DISCOVERY_INDEX_UNWRITABLE",
  ]);
  for (const { message } of warnings) {
    assert.match(message, /it is not a regular file/);
  }
  assert.equal((await Deno.lstat(dir.index)).isFifo, true);
});

Deno.test("rescan() reads only the packs whose files changed", async () => {
  await using dir = await folder();
  await writePack(dir.packs, "a");
  await writePack(dir.packs, "b");
  const catalog = await later(() => createDiskCatalog(dir.packs) // no index file: the proofs stay in memory
  );
  const unchanged = await counted(() => later(() => catalog.rescan()));
  assert.equal(unchanged.reads, 0);
  await Deno.writeTextFile(
    `${dir.packs}/b/lib/helper.js`,
    "export const helper = () => 7;\n",
  );
  const changed = await counted(() => later(() => catalog.rescan()));
  assert.equal(changed.reads, 3);
});

Deno.test("createDiskCatalog() reads a module's bytes when they are asked for and refuses a file changed since discovery", async () => {
  await using dir = await folder();
  await writePack(dir.packs, "a");
  const catalog = await createDiskCatalog(dir.packs);
  const [index, helper] = catalog.summaries()[0]!.modules;
  const path = `${dir.packs}/a/lib/helper.js`;

  const answer = await counted(() => catalog.authorizeDelivery(index!.id));
  assert.equal(answer.reads, 1, "read when asked for");
  assert.equal(answer.hashes, 1, "and checked against its digest");
  assert.equal(
    answer.value.ok && answer.value.content,
    FILES["./index.js"],
  );
  const kept = await counted(() => catalog.authorizeDelivery(index!.id));
  assert.equal(kept.reads, 0, "then kept");
  assert.equal(kept.value, answer.value);

  await Deno.writeTextFile(path, "export const helper = () => 99;\n");
  const refused = await catalog.authorizeDelivery(helper!.id);
  assert.equal(refused.ok, false);
  assert.equal(refused.ok === false && refused.reason, "unavailable");
  assert.equal(refused.ok === false && refused.code, "PACK_FILE_CHANGED");
  assert.equal(refused.ok === false && refused.message.includes(path), false);
  const now = deliveryAuthorizer(catalog)(helper!.id);
  assert.equal((now as { ok: boolean }).ok, false, "the same answer at once");
  const run = catalog.resolveForExecution({
    source: 'import a from "a"; export default a;',
    packages: ["a"],
  });
  assert.deepEqual(
    run.statuses.map((s) => [s.status, "code" in s ? s.code : ""]),
    [["unavailable", "PACK_FILE_CHANGED"]],
  );

  await Deno.writeTextFile(path, FILES["./lib/helper.js"]!);
  assert.equal(
    await deliveredText(catalog, helper!.id),
    FILES["./lib/helper.js"],
  );
  const ok = catalog.resolveForExecution({
    source: 'import a from "a"; export default a;',
    packages: ["a"],
  });
  assert.equal(ok.statuses[0]!.status, "ok");
  assert.equal(ok.modules[helper!.id]!.source, FILES["./lib/helper.js"]);
});

Deno.test("createDiskCatalog() refuses an indexPath inside the packs folder, also one reached through .. or a link, with DISCOVERY_INDEX_INSIDE_PACKS and no path, and writes nothing there", async () => {
  await using dir = await folder();
  await writePack(dir.packs, "greet");
  const root = dir.packs.slice(0, dir.packs.lastIndexOf("/"));
  await Deno.mkdir(`${root}/other`);
  await Deno.symlink(dir.packs, `${root}/link`);
  for (
    const indexPath of [
      `${dir.packs}/index.ndjson`,
      `${dir.packs}/.index.ndjson`,
      `${dir.packs}/greet/index.ndjson`,
      `${dir.packs}/new/index.ndjson`,
      `${root}/other/../packs/index.ndjson`,
      `${root}/link/index.ndjson`,
      dir.packs,
    ]
  ) {
    const warnings: IndexWarningInfo[] = [];
    await assert.rejects(
      createDiskCatalog(dir.packs, {
        indexPath,
        onIndexWarning: (warning) => warnings.push(warning),
      }),
      (error) => {
        assert.equal(
          (error as { code?: unknown }).code,
          "DISCOVERY_INDEX_INSIDE_PACKS",
          indexPath,
        );
        assert.match(
          (error as Error).message,
          /^Cannot use the discovery index: it is inside the packs folder, /,
        );
        assert.equal((error as Error).message.includes(root), false);
        return true;
      },
    );
    assert.deepEqual(warnings, [], indexPath);
  }
  const names: string[] = [];
  for await (const entry of Deno.readDir(dir.packs)) names.push(entry.name);
  assert.deepEqual(names, ["greet"]);
  // Beside it, under a name that begins as the folder's does, is outside.
  const beside = await createDiskCatalog(`${root}/link`, {
    indexPath: `${dir.packs}-index.ndjson`,
  });
  assert.equal(beside.summaries().length, 1);
});
