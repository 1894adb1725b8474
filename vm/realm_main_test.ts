import assert from "node:assert/strict";
import vm from "node:vm";
import { DENY_CODE_GENERATION_SOURCE } from "../realm/deny_code_generation.ts";
import { CONTEXT_BOOTSTRAP_SOURCE } from "./_context_bootstrap.ts";
import * as codec from "./_line_codec.ts";
import { realmProgram, serveRealm } from "./_realm_main.ts";
import { until } from "./node_test/until.mjs";

/** How long a frame may take before the test calls it a hang, however loaded the machine. */
const HANG_MS = 120_000;

/** Serves `source` in this thread; `frames` lists what the realm sent. */
async function servedPlugin(source: string, capabilities: string[] = []) {
  const frames: string[] = [];
  const decode = codec.frameDecoder((kind, id) => frames.push(`${kind}${id}`));
  let deliver: (text: string) => void = () => {};
  serveRealm(
    vm,
    {
      write: decode,
      listen: (onText) => deliver = onText,
    },
    codec,
    {
      isolation: "thread",
      denialSource: DENY_CODE_GENERATION_SOURCE,
      bootstrapSource: CONTEXT_BOOTSTRAP_SOURCE,
    },
  );
  const initJson = JSON.stringify({
    pluginId: "p",
    capabilities,
    randomKey: [1, 2, 3, 4, 5, 6, 7, 8],
    maxPayloadBytes: 1 << 20,
  });
  deliver(codec.encodeFrame(
    "D",
    0,
    "",
    JSON.stringify({
      pluginId: "p",
      source,
      identifier: "p.js",
      initJson,
      timeoutMs: 1000,
    }),
  ));
  await until(() => frames.includes("O0"), "frame O0", HANG_MS);
  return { frames, deliver };
}

Deno.test("a realm answers a ping only after the plugin code of a refused import() has run, however soon the ping comes", async () => {
  const { frames, deliver } = await servedPlugin(
    `export function go() {
  import("cordon:" + "nothing").catch(() => console.log("late"));
  return 1;
}`,
  );
  // The ping arrives with the call, before the realm's next turn.
  deliver(
    codec.encodeFrame("I", 1, "go", "null") + codec.encodeFrame("P", 7, "", ""),
  );
  await until(() => frames.includes("P7"), "frame P7", HANG_MS);
  assert.deepEqual(frames.slice(frames.indexOf("O0") + 1), ["R1", "L0", "P7"]);
});

Deno.test("a realm answers a ping only after the plugin code of an import() refused in the jobs that ping runs", async () => {
  const { frames, deliver } = await servedPlugin(
    `import { capabilities } from "cordon:host";
export function go() {
  capabilities.call("c", 1).then(() =>
    import("cordon:" + "nothing").catch(() => console.log("late"))
  );
  return 1;
}`,
    ["c"],
  );
  deliver(codec.encodeFrame("I", 1, "go", "null"));
  await until(() => frames.includes("R1"), "frame R1", HANG_MS);
  const call = frames.find((frame) => frame.startsWith("C"));
  assert.ok(call !== undefined, "the plugin made no call");
  // The settled call's jobs run in the ping's own turn.
  deliver(
    codec.encodeFrame("S", Number(call.slice(1)), "", "1") +
      codec.encodeFrame("P", 8, "", ""),
  );
  await until(() => frames.includes("P8"), "frame P8", HANG_MS);
  assert.deepEqual(frames.slice(frames.indexOf("R1") + 1), ["L0", "P8"]);
});

Deno.test("realmProgram() reaches Node's built-ins through one importer written as text, as an app's bundler rewrites an import() in a function's body", () => {
  const imports = (text: string) =>
    text.match(/\bimport\((?!\))/g)?.length ?? 0;
  const inData = imports(JSON.stringify(CONTEXT_BOOTSTRAP_SOURCE)) +
    imports(JSON.stringify(DENY_CODE_GENERATION_SOURCE));
  for (const isolation of ["process", "thread", "worker"] as const) {
    assert.equal(imports(realmProgram(isolation)) - inData, 1, isolation);
  }
});
