// What the loader's Node tests share: the Node build's loader, pool,
// catalogs, runner, fixture table, hostile guest table and malformed
// declaration table (`deno task build:node` writes them to dist/node/). The
// loader and the catalogs come from their own entries, which share one copy
// of cordon's classes.

export const { createQuickJSLoader, createQuickJSPool } = await import(
  "../../dist/node/loader/mod.js"
);

export const { createRemoteCatalog, createStagedCatalog, EMPTY_CATALOG } =
  await import("../../dist/node/catalog/mod.js");

export const {
  checkHostileGuest,
  expectationsOf,
  FIXTURE_CASES,
  HOSTILE_GUESTS,
  HOSTILE_LIMITS,
  malformedDeclarations,
  runCase,
  runMalformedDeclaration,
} = await import("../../dist/node/fixtures/mod.js");

export const RUNNER_URL = new URL(
  "../../dist/node/loader/quickjs_runner.js",
  import.meta.url,
);

/** Runs `use` on a pool of two runners over `catalog`, then disposes it. */
export async function withPool(catalog, use) {
  const pool = await createQuickJSPool({
    catalog,
    size: 2,
    runnerUrl: RUNNER_URL,
  });
  try {
    await use(pool);
  } finally {
    await pool[Symbol.asyncDispose]();
  }
}
