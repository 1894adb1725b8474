/**
 * A Web Worker holding its own in-thread QuickJS loader, for the pool
 * benchmark's control: the same runs on two threads of one process, with
 * no subprocess and no pipe, show how much parallelism the machine gives
 * at that moment.
 *
 * Messages in: `{ source }`; out: `"ready"` once, then each run's
 * `SandboxResult`.
 *
 * @module
 */

/// <reference lib="deno.worker" />

import { createDiskCatalog } from "../catalog/disk_catalog.ts";
import { createQuickJSLoader } from "../loader/quickjs_loader.ts";
import { fileURLToPath } from "node:url";

const PACKS = fileURLToPath(new URL("../fixtures/packs/", import.meta.url));
const loader = await createQuickJSLoader({
  catalog: await createDiskCatalog(PACKS),
});

self.onmessage = async (event: MessageEvent<{ source: string }>) => {
  self.postMessage(await loader.run({ source: event.data.source }));
};
self.postMessage("ready");
