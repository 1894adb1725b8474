import assert from "node:assert/strict";
import { replaceFile, syncFolder, writeFileSynced } from "./replace_file.ts";

async function namesIn(dir: string): Promise<string[]> {
  const names: string[] = [];
  for await (const entry of Deno.readDir(dir)) names.push(entry.name);
  return names.sort();
}

Deno.test("replaceFile() puts the new text in place whole and leaves no temporary file", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/a.txt`, "the old text");
    const text = "new ".repeat(100_000);
    let renaming = 0;
    await replaceFile(dir, "a.txt", (file) => file.writeFile(text), {
      temporaryPrefix: ".a.txt.",
      renaming: () => renaming++,
    });
    assert.equal(await Deno.readTextFile(`${dir}/a.txt`), text);
    assert.deepEqual(await namesIn(dir), ["a.txt"]);
    assert.equal(renaming, 1);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("replaceFile() keeps the old file and removes the temporary one when the write fails", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/a.txt`, "the old text");
    const failure = new Error("write failed");
    let renaming = 0;
    await assert.rejects(
      replaceFile(dir, "a.txt", async (file) => {
        await file.writeFile("part of the new");
        throw failure;
      }, { renaming: () => renaming++ }),
      (error) => error === failure,
    );
    assert.equal(await Deno.readTextFile(`${dir}/a.txt`), "the old text");
    assert.deepEqual(await namesIn(dir), ["a.txt"]);
    assert.equal(renaming, 0);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("replaceFile() rejects with the folder's error when it cannot make the temporary file", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await assert.rejects(
      replaceFile(`${dir}/gone`, "a.txt", (file) => file.writeFile("x")),
      (error) => (error as { code?: unknown }).code === "ENOENT",
    );
    assert.deepEqual(await namesIn(dir), []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name:
    "replaceFile() on a full disk rejects with EFBIG and keeps the old file, with no temporary file left",
  // A file size limit stands for the full disk: the write past it fails
  // (EFBIG, SIGXFSZ ignored) as a write past the disk's room does.
  ignore: Deno.build.os !== "linux",
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      await Deno.writeTextFile(`${dir}/a.txt`, "the old text");
      const code = `
        import { replaceFile } from "./protocol/replace_file.ts";
        try {
          await replaceFile(Deno.args[0], "a.txt", (f) => f.writeFile("y".repeat(200_000)));
          console.log("written");
        } catch (error) {
          console.log(error.code);
        }`;
      const run = await new Deno.Command("sh", {
        args: [
          "-c",
          'trap "" XFSZ; ulimit -f 64; exec "$@"',
          "sh",
          Deno.execPath(),
          "eval",
          code,
          dir,
        ],
        cwd: new URL("../", import.meta.url),
        env: { NO_COLOR: "1" },
        stderr: "inherit",
      }).output();
      assert.equal(new TextDecoder().decode(run.stdout).trim(), "EFBIG");
      assert.equal(await Deno.readTextFile(`${dir}/a.txt`), "the old text");
      assert.deepEqual(await namesIn(dir), ["a.txt"]);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("writeFileSynced() writes the bytes over what the file held", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/a.txt`, "a longer old text");
    await writeFileSynced(`${dir}/a.txt`, new TextEncoder().encode("new"));
    assert.equal(await Deno.readTextFile(`${dir}/a.txt`), "new");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("writeFileSynced() with createNew refuses a path where a file or a link already is, with EEXIST, and writes nothing", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/a.txt`, "old");
    await Deno.symlink(`${dir}/target.txt`, `${dir}/link.txt`);
    for (const name of ["a.txt", "link.txt"]) {
      await assert.rejects(
        writeFileSynced(`${dir}/${name}`, new TextEncoder().encode("new"), {
          createNew: true,
        }),
        { code: "EEXIST" },
        name,
      );
    }
    assert.equal(await Deno.readTextFile(`${dir}/a.txt`), "old");
    assert.deepEqual(await namesIn(dir), ["a.txt", "link.txt"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("syncFolder() rejects for a folder that is not there", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await assert.rejects(
      syncFolder(`${dir}/gone`),
      (error) => (error as { code?: unknown }).code === "ENOENT",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name:
    "syncFolder() passes over a folder whose file system has no sync for folders",
  // sysfs answers a folder's fsync with EINVAL.
  ignore: Deno.build.os !== "linux",
  async fn() {
    await syncFolder("/sys/kernel");
  },
});
