import assert from "node:assert/strict";
import { bundleEntries } from "./_npm_bundle.ts";

Deno.test("bundleEntries() refuses a work folder whose path holds a comma, which would widen the bundler's read permission", async () => {
  const parent = await Deno.makeTempDir();
  const work = `${parent}/a,b`;
  try {
    await Deno.mkdir(work, { recursive: true });
    await assert.rejects(
      bundleEntries(work, `${work}/node_modules/x`, []),
      /path holds a comma/,
    );
  } finally {
    await Deno.remove(parent, { recursive: true });
  }
});

Deno.test("bundleEntries() names no part of a temp folder whose path the bundler percent-encodes in its error", async () => {
  const parent = await Deno.makeTempDir({ prefix: "pack work é#" });
  const work = `${parent}/w`;
  const packageDir = `${work}/node_modules/x`;
  try {
    await Deno.mkdir(packageDir, { recursive: true });
    await Deno.writeTextFile(
      `${packageDir}/package.json`,
      '{"name":"x","version":"1.0.0"}',
    );
    await Deno.writeTextFile(
      `${packageDir}/index.js`,
      'import y from "./missing.js"; export default y;',
    );
    const error = await bundleEntries(work, packageDir, [
      {
        subpath: ".",
        file: "index.js",
        alternatives: [],
        browserFiles: [],
        notes: [],
      },
    ]).then(() => undefined, (error: Error) => error);
    assert.ok(error instanceof Error, "the bundle of a missing import failed");
    assert.match(error.message, /node_modules\/x\/missing\.js/);
    assert.doesNotMatch(error.message, /pack%20work|pack work|\/tmp\//);
  } finally {
    await Deno.remove(parent, { recursive: true });
  }
});
