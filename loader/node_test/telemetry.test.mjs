// The Node build's telemetry as a Node project sets it up: the OpenTelemetry
// JS SDK registers its provider through the API version it installs, which
// for every 2.x SDK is below 1.10, and the API copy bundled into the build
// reads a registration only from its own minor version or a later one.
// Both packages come pinned from npm into a folder of their own.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";

import { EMPTY_CATALOG } from "../../dist/node/mod.js";
import { createQuickJSLoader } from "../../dist/node/loader/mod.js";

const API = "@opentelemetry/api@1.9.0";
const SDK = "@opentelemetry/sdk-trace-base@2.12.1";

/** Installs the SDK in a folder of its own and registers an in-memory exporter. */
async function registerSdk(folder) {
  await writeFile(join(folder, "package.json"), "{}\n");
  await promisify(execFile)("npm", [
    "install",
    "--no-audit",
    "--no-fund",
    "--ignore-scripts",
    API,
    SDK,
  ], { cwd: folder });
  const require = createRequire(join(folder, "package.json"));
  const { trace } = require("@opentelemetry/api");
  const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } =
    require("@opentelemetry/sdk-trace-base");
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  assert.ok(trace.setGlobalTracerProvider(provider));
  return exporter;
}

test("a loader run on the Node build is traced by a tracer provider the OpenTelemetry SDK 2 registers through API 1.9", async () => {
  const folder = await mkdtemp(join(tmpdir(), "cordon node telemetry "));
  try {
    const exporter = await registerSdk(folder);
    const loader = await createQuickJSLoader({ catalog: EMPTY_CATALOG });
    const result = await loader.run({ source: "export default 1;" });
    loader[Symbol.dispose]();
    assert.equal(result.ok && result.value, 1);
    const runs = exporter.getFinishedSpans().filter((span) =>
      span.name === "cordon.sandbox.run"
    );
    assert.deepEqual(
      runs.map((span) => [
        span.attributes["cordon.tier"],
        span.attributes["cordon.outcome"],
      ]),
      [["quickjs", "ok"]],
    );
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
});
