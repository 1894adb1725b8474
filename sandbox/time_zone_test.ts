import assert from "node:assert/strict";
import { runScript } from "../tools/_script_run_test.ts";

// Every tier tells a guest the local time of the process that hosts
// cordon: the in-thread engine reads the host's own clock and zone, and the
// children cordon starts are handed the host's TZ.

const ROOT = new URL("../", import.meta.url);

const PROBE = `
import { createQuickJSLoader, createQuickJSPool } from ${
  JSON.stringify(new URL("loader/mod.ts", ROOT).href)
};
import { EMPTY_CATALOG } from ${
  JSON.stringify(new URL("catalog/mod.ts", ROOT).href)
};
import { createWorkerSandbox, createProcessSandbox } from ${
  JSON.stringify(new URL("sandbox/mod.ts", ROOT).href)
};
import { createVmSandbox } from ${
  JSON.stringify(new URL("vm/mod.ts", ROOT).href)
};
const source =
  "export default () => new Date(2026, 0, 1, 12).getTimezoneOffset();";
const offsets = {};
const valueOf = (result) => result.ok ? result.value : result.error.code;
{
  using loader = await createQuickJSLoader({ catalog: EMPTY_CATALOG });
  offsets.loader = valueOf(await loader.run({ source }));
}
{
  await using pool = await createQuickJSPool({ catalog: EMPTY_CATALOG, size: 1 });
  offsets.pool = valueOf(await pool.run({ source }));
}
{
  await using sandbox = createWorkerSandbox();
  offsets.worker = valueOf(await sandbox.run({ source }));
}
{
  await using sandbox = createProcessSandbox();
  offsets.process = valueOf(await sandbox.run({ source }));
}
for (const isolation of ["process", "quickjs"]) {
  await using sandbox = createVmSandbox({
    pluginId: "zone",
    isolation,
    pluginModule: {
      kind: "source",
      source: "export const offset = () => new Date(2026, 0, 1, 12).getTimezoneOffset();",
      identifier: "zone.js",
    },
  });
  offsets["vm " + isolation] = valueOf(await sandbox.invoke("offset", null));
}
console.log(JSON.stringify(offsets));
`;

Deno.test("every tier tells a guest the local time of its host's TZ", async () => {
  const offsets = await runScript(PROBE, {
    flags: ["--allow-all"],
    env: { TZ: "Asia/Kolkata" },
  });
  assert.deepEqual(offsets, {
    loader: -330,
    pool: -330,
    worker: -330,
    process: -330,
    "vm process": -330,
    "vm quickjs": -330,
  });
});
