// The Node build's type declarations as a TypeScript project on Node gets
// them: a strict NodeNext project with @types/node imports every entry by
// name (so does the same project with every strict flag, and one resolved
// as a bundler resolves it), narrows a failure on its code, forwards unset
// settings as undefined options, and tsc (both pinned, from npm) checks the
// README's and the remote, delivery and plugin guides' calls. The build is
// copied, not linked: a link would let TypeScript find cordon's own
// node_modules beside the checkout, which a project that installs the build
// elsewhere does not have. The declarations are written by
// tools/write_node_types.ts and mapped by tools/write_node_package.ts (both
// run by `deno task build:node`).

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { cp, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const BUILD = fileURLToPath(new URL("../../dist/node/", import.meta.url));
const TYPESCRIPT = "typescript@5.9.3";
const NODE_TYPES = "@types/node@20.19.43";

const TSCONFIG = {
  compilerOptions: {
    strict: true,
    module: "NodeNext",
    target: "ES2022",
    noEmit: true,
    skipLibCheck: false,
    types: ["node"],
  },
  files: ["app.ts", "wrong.ts"],
};

/**
 * The same project with optional properties read exactly, as strict Node
 * projects often set it: a property the types mark optional may be given
 * as `undefined` only where cordon accepts that.
 */
const TSCONFIG_EXACT_OPTIONAL = {
  ...TSCONFIG,
  compilerOptions: {
    ...TSCONFIG.compilerOptions,
    exactOptionalPropertyTypes: true,
  },
};

/**
 * The same project with every strict flag a strict project adds to
 * `strict`: an index read may be `undefined`, an index signature is read
 * with brackets, an override says so, and an optional property is exact.
 */
const TSCONFIG_STRICTEST = {
  ...TSCONFIG,
  compilerOptions: {
    ...TSCONFIG_EXACT_OPTIONAL.compilerOptions,
    noUncheckedIndexedAccess: true,
    noPropertyAccessFromIndexSignature: true,
    noImplicitOverride: true,
  },
};

/**
 * The strictest project resolved as a bundler resolves it (Vite, esbuild,
 * webpack projects): the package's `types` conditions, without NodeNext's
 * rules for the importing file.
 */
const TSCONFIG_BUNDLER = {
  ...TSCONFIG_STRICTEST,
  compilerOptions: {
    ...TSCONFIG_STRICTEST.compilerOptions,
    module: "ESNext",
    moduleResolution: "Bundler",
  },
};

/**
 * The same project without the DOM library, as Node projects often set it
 * (`@tsconfig/node20` has `lib: ["es2023"]`): the web types then come from
 * @types/node alone, which declares `Headers` and `RequestInit` but not
 * every DOM alias.
 */
const TSCONFIG_WITHOUT_DOM = {
  ...TSCONFIG,
  compilerOptions: { ...TSCONFIG.compilerOptions, lib: ["ES2023"] },
};

/** The documented calls, each entry imported by name: must type-check. */
const APP = `
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import {
  CordonError,
  createQuickJSPool,
  createRemoteCatalog,
  createStagedCatalog,
  EMPTY_CATALOG,
  type ErrorCode,
  type SandboxResult,
} from "@cordon/cordon";
import {
  createQuickJSLoader,
  type QuickJSPoolOptions,
  type QuickJSRunOptions,
} from "@cordon/cordon/loader";
import type { SandboxModuleCatalog } from "@cordon/cordon/catalog";
import { createDiskCatalog, type DiskCatalog } from "@cordon/cordon/catalog/disk";
import {
  createDeliveryHandler,
  type DeliveryServer,
  serveDelivery,
} from "@cordon/cordon/delivery";
import type { RunnerChannel } from "@cordon/cordon/loader/runner";
import {
  createPluginHost,
  createSandboxedVmPluginModule,
  identifyByTrustedHeaders,
  toNodeListener,
} from "@cordon/cordon/plugin";
import { runVmHostBridgeConformance } from "@cordon/cordon/plugin/testing";
import { FIXTURE_CASES } from "@cordon/cordon/fixtures";
import { createVmSandbox, type VmSandboxOptions } from "@cordon/cordon/vm";

const catalog: SandboxModuleCatalog = createRemoteCatalog({
  baseUrl: "http://127.0.0.1:8000",
  headers: { Authorization: "Bearer t1-token" },
  requester: { tenantId: "t1" },
});
await using pool = await createQuickJSPool({
  catalog,
  runnerUrl: new URL(import.meta.resolve("@cordon/cordon/loader/runner")),
});
const result: SandboxResult = await pool.run({
  source: 'import { greet } from "greet"; export default greet("node");',
  packages: ["greet"],
});
const answer: string = result.ok ? String(result.value) : result.error.code;

using loader = await createQuickJSLoader({
  catalog: createStagedCatalog({ indexUrl: "https://cdn.example.com/cordon/index.json" }),
});
const sum = await loader.run(
  { source: "export default ({ a, b }) => a + b;", packages: [] },
  { context: { a: 2, b: 3 }, timeoutMs: 1000 },
);
const stuck = await pool.run({ source: "export default 1;" }, { timeoutMs: 300, requester: { tenantId: "t1" } });

const host = createPluginHost({ identify: identifyByTrustedHeaders });
await host.installPlugin({
  kind: "vm",
  module: createSandboxedVmPluginModule({
    manifest: { id: "greet", version: "1.0.0", capabilities: ["config.get"] },
    sandbox: createVmSandbox({
      pluginId: "greet",
      pluginModule: {
        kind: "source",
        source: await readFile("./greet_plugin.js", "utf8"),
        identifier: "greet_plugin.js",
      },
      policy: { capabilities: ["config.get"], fetch: ["127.0.0.1:9000"] },
      proxies: { capabilities: { "config.get": () => ({ greeting: "Hello" }) } },
      limits: { timeoutMs: 2000, memoryLimitBytes: 64 * 1024 * 1024 },
    }),
  }),
});
createServer(toNodeListener(host.fetch)).listen(8080, "127.0.0.1");
createServer(
  toNodeListener(createDeliveryHandler(catalog, { requester: () => ({ tenantId: "t1" }) })),
).listen(8000, "127.0.0.1");
createDeliveryHandler(catalog, {
  requester: (request) => ({ tenantId: request.headers.get("x-tenant") ?? undefined }),
});
await using served: DeliveryServer = await serveDelivery({ packsDir: "./packs", port: 0 });
const port: number = served.addr.port;
const disk: DiskCatalog = await createDiskCatalog("./packs", {
  indexPath: "./packs-index.jsonl",
  onIndexWarning: ({ code, message }) => console.warn(code, message),
});
createServer(toNodeListener(createDeliveryHandler(disk))).listen(8001, "127.0.0.1");

const report = await runVmHostBridgeConformance({
  buildBridge: (plugin) =>
    createSandboxedVmPluginModule({
      manifest: plugin.manifest,
      sandbox: createVmSandbox({
        pluginId: plugin.pluginId,
        pluginModule: plugin.pluginModule,
        policy: plugin.policy,
        proxies: plugin.proxies,
      }),
    }),
});
const passed: boolean = report.passed;

// A failure's code is one of the registry's codes: a switch narrows on it,
// and a code that does not exist is refused where it is compared.
function advice(outcome: SandboxResult): string {
  if (outcome.ok) return "done";
  const code: ErrorCode = outcome.error.code;
  switch (code) {
    case "TIMEOUT":
      return "raise timeoutMs";
    default:
      return code;
  }
}
// @ts-expect-error TIMEOUTS is no error code
const misspelt = !result.ok && result.error.code === "TIMEOUTS";

// Settings read from the environment are forwarded as they are, undefined
// when unset: every option cordon drops when undefined takes it.
const configured: number | undefined = Number(process.env["TIMEOUT_MS"]) || undefined;
const runOptions: QuickJSRunOptions = { timeoutMs: configured, signal: undefined, context: undefined };
const poolOptions: QuickJSPoolOptions = { catalog, size: configured, runnerUrl: undefined };
await pool.run({ source: "export default 1;" }, runOptions);
createRemoteCatalog({ baseUrl: "http://127.0.0.1:8000", maxModuleBytes: configured, fetch: undefined });
createDeliveryHandler(catalog, { prefix: process.env["PREFIX"], requester: undefined });
createPluginHost({ identify: identifyByTrustedHeaders, basePath: process.env["BASE_PATH"], onError: undefined });
const vmOptions: VmSandboxOptions = {
  pluginId: "add",
  pluginModule: { kind: "source", source: "export function add() {}", identifier: "add.js" },
  limits: { timeoutMs: configured },
  policy: { fetch: undefined, fs: { read: undefined } },
};
await createVmSandbox(vmOptions).invoke("add", null, { timeoutMs: configured, signal: undefined });
console.log(advice(result), misspelt, poolOptions);
const channel: RunnerChannel | undefined = undefined;
console.log(answer, sum.ok, stuck.ok || stuck.error.code, EMPTY_CATALOG, FIXTURE_CASES.length, passed, channel, CordonError, port);
`;

/** One wrong call, which only cordon's real types refuse. */
const WRONG = `
import { createQuickJSPool, EMPTY_CATALOG } from "@cordon/cordon";

await using pool = await createQuickJSPool({ catalog: EMPTY_CATALOG });
await pool.run({ source: 42 });
`;

/** The lines of tsc's errors for the project under one of its configs. */
async function typeErrors(project, config) {
  const tsc = join(project, "node_modules", "typescript", "bin", "tsc");
  const checked = await promisify(execFile)(process.execPath, [
    tsc,
    "-p",
    config,
  ], { cwd: project }).then(() => ({ stdout: "" }), (error) => error);
  return checked.stdout.split("\n").filter((line) => /error TS/.test(line));
}

test("the Node build's declarations type-check a strict NodeNext project's calls of every entry, with the DOM library or without it, with exact optional properties, with every strict flag and under bundler resolution, and refuse a wrong one", async () => {
  const project = await mkdtemp(join(tmpdir(), "cordon node types "));
  try {
    await writeFile(join(project, "package.json"), '{ "type": "module" }\n');
    await promisify(execFile)(
      "npm",
      [
        "install",
        "--no-audit",
        "--no-fund",
        "--ignore-scripts",
        TYPESCRIPT,
        NODE_TYPES,
      ],
      { cwd: project },
    );
    await cp(BUILD, join(project, "node_modules", "@cordon", "cordon"), {
      recursive: true,
    });
    await writeFile(join(project, "tsconfig.json"), JSON.stringify(TSCONFIG));
    await writeFile(
      join(project, "tsconfig.without_dom.json"),
      JSON.stringify(TSCONFIG_WITHOUT_DOM),
    );
    await writeFile(
      join(project, "tsconfig.exact_optional.json"),
      JSON.stringify(TSCONFIG_EXACT_OPTIONAL),
    );
    await writeFile(
      join(project, "tsconfig.strictest.json"),
      JSON.stringify(TSCONFIG_STRICTEST),
    );
    await writeFile(
      join(project, "tsconfig.bundler.json"),
      JSON.stringify(TSCONFIG_BUNDLER),
    );
    await writeFile(join(project, "app.ts"), APP);
    await writeFile(join(project, "wrong.ts"), WRONG);
    for (
      const config of [
        "tsconfig.json",
        "tsconfig.without_dom.json",
        "tsconfig.exact_optional.json",
        "tsconfig.strictest.json",
        "tsconfig.bundler.json",
      ]
    ) {
      assert.deepEqual(await typeErrors(project, config), [
        "wrong.ts(5,18): error TS2322: Type 'number' is not assignable to type 'string'.",
      ], config);
    }
  } finally {
    await rm(project, { recursive: true, force: true });
  }
});
