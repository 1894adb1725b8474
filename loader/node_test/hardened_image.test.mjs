// The Node build's engines restore the hardened image. `deno bundle`
// reprints the realm's functions, whose text the hardening scripts are, so
// `deno task build:node` stamps the built image with the digest of the
// built scripts (tools/stamp_hardened_image.ts); without it no engine of
// the build restores the image.
//
// Emscripten writes the host's `navigator.language` into the engine's
// memory (as LANG) before the fork point, so the fork digest matches only
// on a host with the language the image was made under, which the image
// records. Node 20 has no navigator at all: this file presents the image's
// language as the host's, and another one.

import assert from "node:assert/strict";
import { readdir } from "node:fs/promises";
import { test } from "node:test";
import {
  createQuickJSLoader,
  createStagedCatalog,
  EMPTY_CATALOG,
  FIXTURE_CASES,
  runCase,
} from "./_node_pool.mjs";
import { serve, stagedAnswer } from "./_fixture_server.mjs";

const { restoredEngineCount } = await import(
  "../../dist/node/loader/_restored_engines.js"
);

const BUILD = new URL("../../dist/node/", import.meta.url);

/** The image the build ships, from its chunk of the build. */
async function builtImage() {
  const names = (await readdir(BUILD)).filter((name) =>
    /^_hardened_image_data-\w+\.js$/.test(name)
  );
  assert.equal(names.length, 1, `dist/node holds ${names.length} images`);
  const { HARDENED_IMAGE_DATA } = await import(new URL(names[0], BUILD).href);
  return HARDENED_IMAGE_DATA;
}

const HARDENED_IMAGE_DATA = await builtImage();

/** Makes `language` the host's `navigator.language`, as Emscripten reads it. */
function presentLanguage(language) {
  Object.defineProperty(globalThis, "navigator", {
    value: language === null ? undefined : { language },
    configurable: true,
    writable: true,
  });
}

/** Whether the engine of a loader created now restored the image. */
async function loaderRestores() {
  const before = restoredEngineCount();
  const loader = await createQuickJSLoader({ catalog: EMPTY_CATALOG });
  try {
    const result = await loader.run({ source: "export default 6 * 7;" });
    assert.deepEqual(result.ok && result.value, 42);
    return restoredEngineCount() - before === 1;
  } finally {
    loader[Symbol.dispose]();
  }
}

test("the Node build's loader restores the hardened image on a host with the language the image was made under", async () => {
  presentLanguage(HARDENED_IMAGE_DATA.hostLanguage);
  assert.equal(await loaderRestores(), true);
});

test("the Node build's loader hardens its engine itself where the memory at the fork point differs (another host language)", async () => {
  presentLanguage(`${HARDENED_IMAGE_DATA.hostLanguage ?? "en"}-x-other`);
  assert.equal(await loaderRestores(), false);
  presentLanguage(HARDENED_IMAGE_DATA.hostLanguage);
  assert.equal(await loaderRestores(), true);
});

test("the Node build's loader gives the fixture table's outcomes on an engine restored from the hardened image", async (t) => {
  presentLanguage(HARDENED_IMAGE_DATA.hostLanguage);
  const server = await serve(stagedAnswer);
  try {
    const before = restoredEngineCount();
    const loader = await createQuickJSLoader({
      catalog: createStagedCatalog({
        indexUrl: `${server.origin}/index.json`,
      }),
    });
    try {
      assert.equal(restoredEngineCount() - before, 1);
      for (const fixtureCase of FIXTURE_CASES) {
        await t.test(fixtureCase.name, async () => {
          assert.deepEqual(
            await runCase(loader, fixtureCase),
            fixtureCase.expect,
          );
        });
      }
    } finally {
      loader[Symbol.dispose]();
    }
  } finally {
    await server.close();
  }
});
