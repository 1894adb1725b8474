/**
 * Runs every check and test of the project and prints one closing line,
 * `N passed, N failed`, with the totals of every leg: the static checks,
 * `deno test` (unit, integration and doc tests), the Node tests and
 * the Playwright leg in Chromium, against the page server on Deno and on
 * Node.
 *
 * Usage: `deno task test [--only static,deno,node,browser]`
 *
 * @module
 */

import { fileURLToPath } from "node:url";

interface LegResult {
  name: string;
  passed: number;
  failed: number;
}

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const TMP = `${ROOT}.tmp/`;
const DENO = Deno.execPath();
const CHROMIUM = "/usr/bin/chromium";
const NGINX = "/usr/sbin/nginx";
const PYTHON = "/usr/bin/python3";

const CONFIG = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`)) as {
  exports: Record<string, string>;
  test: { exclude: string[] };
};
const ENTRY_POINTS: string[] = Object.values(CONFIG.exports);

async function run(
  label: string,
  command: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<boolean> {
  console.log(`\n▶ ${label}: ${command} ${args.join(" ")}`);
  const child = new Deno.Command(command, {
    args,
    cwd: ROOT,
    env: { NO_COLOR: "1", ...env },
    stdin: "null",
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
  const { success } = await child.status;
  console.log(`${success ? "✔" : "✘"} ${label}`);
  return success;
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

async function staticChecks(): Promise<LegResult> {
  const checks: [string, string[]][] = [
    ["deno fmt --check", ["fmt", "--check"]],
    ["deno lint", ["lint"]],
    ["deno check", ["check", ...ENTRY_POINTS]],
    ["deno doc --lint", ["doc", "--lint", ...ENTRY_POINTS]],
    ["deno publish --dry-run", ["publish", "--dry-run", "--allow-dirty"]],
    ["import graph", [
      "run",
      "--allow-read",
      "--allow-run",
      "--allow-write=.tmp",
      "tools/check_imports.ts",
    ]],
    ["hardened image is current", [
      "run",
      "--allow-read=.",
      "tools/write_hardened_image.ts",
      "--check",
    ]],
  ];
  let passed = 0;
  let failed = 0;
  for (const [label, args] of checks) {
    if (await run(label, DENO, args)) passed++;
    else failed++;
  }
  return { name: "static checks", passed, failed };
}

function countJunit(xml: string): { passed: number; failed: number } {
  let passed = 0;
  let failed = 0;
  for (
    const match of xml.matchAll(
      /<testcase\b[^>]*?(\/>|>([\s\S]*?)<\/testcase>)/g,
    )
  ) {
    const body = match[2] ?? "";
    if (/<(failure|error)\b/.test(body)) failed++;
    else if (!/<skipped\b/.test(body)) passed++;
  }
  return { passed, failed };
}

/** Runs `deno test` with `args`, its output kept in `log`. */
async function denoTestInto(log: string, args: string[]): Promise<boolean> {
  const file = await Deno.open(log, {
    write: true,
    create: true,
    truncate: true,
  });
  const child = new Deno.Command(DENO, {
    args: ["test", "--allow-all", "--trace-leaks", ...args],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  // One file, written in order: the two streams may share it.
  const writer = file.writable.getWriter();
  const copy = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream) await writer.write(chunk);
  };
  await Promise.all([copy(child.stdout), copy(child.stderr)]);
  await writer.close();
  return (await child.status).success;
}

/**
 * The folders whose tests, with their doc tests, run in a second `deno test`
 * process beside the first, which runs everything else: about half the
 * leg's time each on two cores. Move a folder when one side grows.
 */
const SECOND_PROCESS = ["plugin/", "cli/", "loader/"];

/**
 * Runs `deno test` in two processes at once. Each runs its test modules one
 * after another, as the tests that check their own process for children,
 * descriptors, busy cores or memory left behind need: `--parallel` would
 * run modules side by side in one process, where each sees the others'.
 */
async function denoTests(): Promise<LegResult> {
  await ensureDebianPackage("python3", PYTHON);
  const lanes = [
    // `--ignore` replaces deno.json's `test.exclude`, so it names both.
    ["--ignore=" + [...CONFIG.test.exclude, ...SECOND_PROCESS].join(",")],
    SECOND_PROCESS,
  ];
  console.log(`\n▶ deno test, in ${lanes.length} processes at once`);
  const results = await Promise.all(lanes.map(async (paths, i) => {
    const junit = `${TMP}deno-junit-${i}.xml`;
    const log = `${TMP}deno-test-${i}.log`;
    await Deno.remove(junit).catch(() => {});
    const success = await denoTestInto(log, [
      "--doc",
      `--junit-path=${junit}`,
      ...paths,
    ]);
    const label = `deno test ${paths.join(" ")}`;
    console.log(`\n▶ ${label}\n\n${await Deno.readTextFile(log)}`);
    console.log(`${success ? "✔" : "✘"} ${label}`);
    const counts = countJunit(await Deno.readTextFile(junit).catch(() => ""));
    // A run that crashed before writing its report still counts as a failure.
    if (!success && counts.failed === 0) counts.failed = 1;
    return counts;
  }));
  return {
    name: "deno test",
    passed: results.reduce((n, r) => n + r.passed, 0),
    failed: results.reduce((n, r) => n + r.failed, 0),
  };
}

let nodeBuild: Promise<boolean> | undefined;

/**
 * Runs `deno task build:node` once per run of this script: the Node leg and
 * the browser leg both read the Node build, and neither changes it.
 */
function buildNode(): Promise<boolean> {
  return nodeBuild ??= run("build the Node entry", DENO, [
    "task",
    "build:node",
  ]);
}

/** The folders of Node tests, run on the bundle `deno task build:node` writes. */
const NODE_SUITES = [
  "loader/node_test/",
  "catalog/node_test/",
  "delivery/node_test/",
  "vm/node_test/",
  "plugin/node_test/",
];

/**
 * The test files of the Node folders, named one by one: Node 20's `--test`
 * searches a folder it is given, and Node 22 and later read each argument as
 * a file or glob pattern, so a folder is a missing file there and a glob is
 * one on Node 20.
 */
async function nodeTestFiles(): Promise<string[]> {
  const files = [];
  for (const folder of NODE_SUITES) {
    if (!await exists(`${ROOT}${folder}`)) continue;
    const names = [];
    for await (const entry of Deno.readDir(`${ROOT}${folder}`)) {
      if (entry.isFile && entry.name.endsWith(".test.mjs")) {
        names.push(entry.name);
      }
    }
    files.push(...names.sort().map((name) => `${ROOT}${folder}${name}`));
  }
  return files;
}

async function nodeTests(): Promise<LegResult> {
  const suites = await nodeTestFiles();
  if (suites.length === 0) return { name: "node --test", passed: 0, failed: 0 };
  if (!await buildNode()) return { name: "node --test", passed: 0, failed: 1 };
  const tap = `${TMP}node.tap`;
  const success = await run("node --test", "node", [
    "--experimental-vm-modules",
    "--test",
    // Each file runs in a process of its own: two at once on two cores.
    `--test-concurrency=${Math.max(2, navigator.hardwareConcurrency - 1)}`,
    "--test-reporter=spec",
    "--test-reporter-destination=stdout",
    "--test-reporter=tap",
    `--test-reporter-destination=${tap}`,
    ...suites,
  ]);
  const text = await Deno.readTextFile(tap).catch(() => "");
  const passed = Number(text.match(/^# pass (\d+)/m)?.[1] ?? 0);
  let failed = Number(text.match(/^# fail (\d+)/m)?.[1] ?? 0);
  if (!success && failed === 0) failed = 1;
  return { name: "node --test", passed, failed };
}

/**
 * Installs one of Debian's packages when `path` is missing, as the tests
 * need it: Chromium for the Playwright leg, nginx to serve the staged
 * tree to it, python3 for the delivery server written in Python.
 */
async function ensureDebianPackage(pkg: string, path: string): Promise<void> {
  if (await exists(path)) return;
  console.log(`${pkg} is missing: installing Debian's ${pkg} package`);
  const ok = await run("apt-get update", "apt-get", ["update"]) &&
    await run(`apt-get install ${pkg}`, "apt-get", [
      "install",
      "-y",
      "--no-install-recommends",
      pkg,
    ], { DEBIAN_FRONTEND: "noninteractive" });
  if (!ok) {
    throw new Error(
      `Cannot install ${pkg}: run "apt-get install -y ${pkg}" as root, then run the tests again`,
    );
  }
}

async function browserTests(): Promise<LegResult> {
  const config = `${ROOT}e2e/playwright.config.ts`;
  if (!await exists(config)) {
    return { name: "playwright", passed: 0, failed: 0 };
  }
  await ensureDebianPackage("chromium", CHROMIUM);
  await ensureDebianPackage("nginx", NGINX);
  if (!await exists(`${ROOT}e2e/node_modules/@playwright/test`)) {
    if (
      !await run("npm ci (e2e)", "npm", [
        "ci",
        "--prefix",
        "e2e",
        "--no-audit",
        "--no-fund",
      ])
    ) {
      return { name: "playwright", passed: 0, failed: 1 };
    }
  }
  if (!await run("deno task bundle", DENO, ["task", "bundle"])) {
    return { name: "playwright", passed: 0, failed: 1 };
  }
  // Project `node` serves the pages from the Node build, so the leg runs
  // alone (`--only browser`) on a clean checkout too.
  if (!await buildNode()) {
    return { name: "playwright", passed: 0, failed: 1 };
  }
  const report = `${ROOT}e2e/test-results/results.json`;
  await Deno.remove(report).catch(() => {});
  const success = await run(
    "playwright test",
    `${ROOT}e2e/node_modules/.bin/playwright`,
    ["test", "-c", config],
    { CORDON_DENO: DENO, PLAYWRIGHT_JSON_OUTPUT_NAME: report },
  );
  const stats = JSON.parse(await Deno.readTextFile(report).catch(() => "{}"))
    .stats ?? {};
  const passed = (stats.expected ?? 0) + (stats.flaky ?? 0);
  let failed = stats.unexpected ?? 0;
  if (!success && failed === 0) failed = 1;
  return { name: "playwright", passed, failed };
}

const LEGS: Record<string, () => Promise<LegResult>> = {
  static: staticChecks,
  deno: denoTests,
  node: nodeTests,
  browser: browserTests,
};

async function main(): Promise<number> {
  const onlyIndex = Deno.args.indexOf("--only");
  const selected = onlyIndex >= 0
    ? (Deno.args[onlyIndex + 1] ?? "").split(",")
    : Object.keys(LEGS);
  await Deno.mkdir(TMP, { recursive: true });
  const results: LegResult[] = [];
  for (const name of selected) {
    const leg = LEGS[name];
    if (!leg) {
      throw new RangeError(
        `Unknown leg "${name}": use ${Object.keys(LEGS).join(", ")}`,
      );
    }
    try {
      results.push(await leg());
    } catch (error) {
      console.error(error instanceof Error ? error.message : error);
      results.push({ name, passed: 0, failed: 1 });
    }
  }
  console.log("\nSummary:");
  for (const r of results) {
    console.log(`  ${r.name}: ${r.passed} passed, ${r.failed} failed`);
  }
  const passed = results.reduce((n, r) => n + r.passed, 0);
  const failed = results.reduce((n, r) => n + r.failed, 0);
  console.log(`${passed} passed, ${failed} failed`);
  return failed === 0 && passed > 0 ? 0 : 1;
}

if (import.meta.main) Deno.exit(await main());
