// What the pool's Node tests share: the Node build's pool and runner
// (`deno task build:node` writes them to dist/loader/) and a catalog with
// no packs, over which guest code still runs.

export const { createQuickJSPool } = await import("../../dist/loader/mod.js");

export const RUNNER_URL = new URL(
  "../../dist/loader/quickjs_runner.js",
  import.meta.url,
);

/** A catalog with no packs. */
export const EMPTY_CATALOG = {
  resolveForExecution: () => ({
    statuses: [],
    packs: {},
    modules: {},
    installed: [],
  }),
  authorizeDelivery: () =>
    Promise.resolve({
      ok: false,
      reason: "not-found",
      code: "MODULE_NOT_FOUND",
      message: "none",
    }),
  summaries: () => [],
};
