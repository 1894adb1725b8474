import assert from "node:assert/strict";
import { writePackFolder } from "./_pack_write.ts";

/** A pack of `count` files, each of the one letter `tag`. */
function packOf(tag: string, count = 20): [string, Uint8Array][] {
  const bytes = new TextEncoder().encode(tag.repeat(1000));
  return Array.from({ length: count }, (_, i) => [`lib/f${i}.js`, bytes]);
}

Deno.test("writePackFolder() run twice at once for one pack writes both, one after the other, and leaves one whole pack and no hidden folder", async () => {
  const outDir = await Deno.makeTempDir();
  try {
    // Each round races two swaps; one that met the other's pack put in
    // place between its two renames failed with ENOTEMPTY and left the
    // pack it had set aside as a hidden folder.
    for (let round = 0; round < 100; round++) {
      await Promise.all([
        writePackFolder(outDir, "p", packOf("a")),
        writePackFolder(outDir, "p", packOf("b")),
      ]);
      const left = [];
      for await (const entry of Deno.readDir(outDir)) left.push(entry.name);
      assert.deepEqual(left, ["p"], `round ${round}`);
      const files = [];
      for await (const entry of Deno.readDir(`${outDir}/p/lib`)) {
        files.push(await Deno.readTextFile(`${outDir}/p/lib/${entry.name}`));
      }
      assert.equal(files.length, 20);
      assert.equal(new Set(files).size, 1, "the files of one pack");
    }
  } finally {
    await Deno.remove(outDir, { recursive: true });
  }
});
