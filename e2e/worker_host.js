// A dedicated Web Worker that hosts cordon as a page's main thread would:
// it loads the browser bundle, and for each declaration it is sent runs it
// on an in-thread loader and on a pool of one runner that it starts itself
// (a nested worker), over the remote catalog of its own origin, and posts
// back each outcome, or what each start threw.
const cordon = await import("/dist/cordon.js");
const catalog = cordon.createRemoteCatalog({ baseUrl: location.origin });

async function outcome(create, declaration) {
  try {
    const runner = await create();
    try {
      const { ok, value, error } = await runner.run(declaration);
      return { ok, value, code: error?.code };
    } finally {
      runner[Symbol.dispose]();
    }
  } catch (error) {
    return { name: error?.name, code: error?.code, message: error?.message };
  }
}

globalThis.addEventListener("message", async ({ data }) => {
  const loader = await outcome(
    () => cordon.createQuickJSLoader({ catalog }),
    data,
  );
  const pool = await outcome(
    () =>
      cordon.createQuickJSPool({
        catalog,
        size: 1,
        isolation: "worker",
        runnerUrl: new URL("/dist/cordon-runner.js", location.origin),
      }),
    data,
  );
  globalThis.postMessage({ loader, pool });
});
globalThis.postMessage("ready");
