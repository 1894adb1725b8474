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
