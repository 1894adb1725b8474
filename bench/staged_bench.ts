/**
 * Staged tree benchmark, in two parts.
 *
 * 1. `deno task stage` and `deno task verify` over a generated packs folder
 *    of 1,000 packs × 10 modules (written to a temporary folder, as the
 *    discovery benchmark writes it), each run as the command a release
 *    pipeline runs: a fresh Deno process. Reported: the time the command
 *    reports for its own work, and the wall time including Deno's start.
 *    Targets: each under 2 s.
 * 2. A browser's first run, side by side in one run: Chromium (through
 *    Playwright) opens a page, creates a QuickJS loader, and times its
 *    first `run` of a declaration (the catalog's prefetch of what it
 *    declares, then the run) through the staged catalog over the staged
 *    tree behind nginx (configured from the tree's `_nginx.conf`), and
 *    through the remote catalog over the delivery server (`e2e/server.ts`,
 *    the delivery handler over the same packs). Each round uses a fresh
 *    browser context (empty HTTP cache) per side, in alternating order;
 *    the table reports medians and the median of the per-round ratios.
 *    Two packs folders: the fixture packs (4 packs) and the generated one.
 *    Target: staged ≤ 1.0× the delivery server.
 *
 * Run: `deno run -A bench/staged_bench.ts [--rounds 3] [--browser-rounds 9]
 * [--packs 1000] [--modules 10]`; it builds the browser bundle when
 * `dist/` lacks it, and needs `/usr/sbin/nginx` and `/usr/bin/chromium`.
 *
 * @module
 */

// deno-lint-ignore no-import-prefix -- bench only: kept out of deno.json so the library does not install it
import { type Browser, chromium } from "npm:playwright-core@1.65.1";
import { generatePacks } from "./discovery_bench.ts";
import { flag, loadAverage, median } from "./_measure.ts";
import { startNginx } from "../e2e/nginx.ts";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const DENO = Deno.execPath();
const CHROMIUM = "/usr/bin/chromium";

interface CommandTiming {
  reportedMs: number;
  wallMs: number;
  output: string;
}

async function runCommand(args: string[]): Promise<CommandTiming> {
  const started = performance.now();
  const { code, stdout, stderr } = await new Deno.Command(DENO, {
    args: ["run", "--config", `${ROOT}deno.json`, ...args],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
  }).output();
  const wallMs = performance.now() - started;
  const output = new TextDecoder().decode(stdout).trim();
  if (code !== 0) {
    throw new Error(
      `${args.join(" ")} failed: ${output} ${new TextDecoder().decode(stderr)}`,
    );
  }
  const reported = Number(output.match(/in (\d+) ms/)?.[1] ?? NaN);
  return { reportedMs: reported, wallMs, output: output.split("\n").at(-1)! };
}

function stage(packs: string, out: string): Promise<CommandTiming> {
  return runCommand([
    "--allow-read",
    "--allow-write",
    "cli/stage.ts",
    "--packs",
    packs,
    "--out",
    out,
  ]);
}

function verify(dir: string): Promise<CommandTiming> {
  return runCommand(["--allow-read", "cli/verify.ts", dir]);
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

/** The page server of the browser leg: the delivery handler plus the page. */
async function startDeliveryServer(packs: string) {
  const port = freePort();
  const child = new Deno.Command(DENO, {
    args: [
      "run",
      "--config",
      `${ROOT}deno.json`,
      "--allow-read",
      "--allow-net=127.0.0.1",
      "e2e/server.ts",
      "--port",
      String(port),
      "--packs",
      packs,
    ],
    cwd: ROOT,
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("page server on")) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`The delivery server stopped: ${text}`);
    text += value;
  }
  const draining = (async () => {
    while (!(await reader.read()).done);
  })();
  return {
    origin: `http://127.0.0.1:${port}`,
    async stop() {
      child.kill();
      await child.status;
      await draining.catch(() => {});
    },
  };
}

/** Builds the browser bundles when they are missing. */
async function ensureBundle(): Promise<void> {
  try {
    await Deno.stat(`${ROOT}dist/cordon.js`);
    await Deno.stat(`${ROOT}dist/cordon-runner.js`);
  } catch {
    const { success } = await new Deno.Command(DENO, {
      args: ["task", "-q", "bundle"],
      cwd: ROOT,
      stdout: "null",
    }).spawn().status;
    if (!success) {
      throw new Error("Cannot build the bundle: deno task bundle failed");
    }
  }
}

async function siteFolder(dir: string): Promise<string> {
  const site = `${dir}/site`;
  await Deno.mkdir(`${site}/dist`, { recursive: true });
  for (
    const [from, to] of [
      ["e2e/index.html", "index.html"],
      ["e2e/page.js", "page.js"],
      ["dist/cordon.js", "dist/cordon.js"],
      ["dist/cordon-runner.js", "dist/cordon-runner.js"],
    ]
  ) {
    await Deno.copyFile(`${ROOT}${from}`, `${site}/${to}`);
  }
  return site;
}

interface Declaration {
  source: string;
  packages: string[];
}

/** Times one first run in a fresh browser context, in the page. */
async function firstRun(
  browser: Browser,
  origin: string,
  kind: "staged" | "delivery",
  declaration: Declaration,
): Promise<{ ms: number; value: unknown }> {
  const context = await browser.newContext({ baseURL: origin });
  try {
    const page = await context.newPage();
    await page.goto("/");
    await page.waitForFunction(() =>
      (globalThis as { cordonSettled?: boolean }).cordonSettled === true
    );
    return await page.evaluate(async ({ kind, declaration }) => {
      // deno-lint-ignore no-explicit-any
      const cordon = (globalThis as any).cordon;
      const catalog = kind === "staged"
        ? cordon.createStagedCatalog({
          indexUrl: new URL("/index.json", location.origin),
        })
        : cordon.createRemoteCatalog({ baseUrl: location.origin });
      const loader = await cordon.createQuickJSLoader({ catalog });
      const started = performance.now();
      const result = await loader.run(declaration);
      const ms = performance.now() - started;
      loader[Symbol.dispose]();
      if (!result.ok) throw new Error(result.error.message);
      return { ms, value: result.value };
    }, { kind, declaration });
  } finally {
    await context.close();
  }
}

interface BrowserRow {
  label: string;
  stagedMs: number;
  deliveryMs: number;
  ratio: number;
}

async function compareFirstRuns(
  browser: Browser,
  label: string,
  packs: string,
  tree: string,
  site: string,
  declaration: Declaration,
  rounds: number,
): Promise<BrowserRow> {
  await using nginx = await startNginx({ treeDir: tree, siteDir: site });
  const delivery = await startDeliveryServer(packs);
  try {
    const staged: number[] = [];
    const served: number[] = [];
    const ratios: number[] = [];
    // One untimed pair first: Chromium's own first start is not either side's.
    await firstRun(browser, nginx.origin, "staged", declaration);
    await firstRun(browser, delivery.origin, "delivery", declaration);
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0
        ? (["staged", "delivery"] as const)
        : (["delivery", "staged"] as const);
      const times: Record<string, number> = {};
      const values: unknown[] = [];
      for (const kind of order) {
        const origin = kind === "staged" ? nginx.origin : delivery.origin;
        const { ms, value } = await firstRun(
          browser,
          origin,
          kind,
          declaration,
        );
        times[kind] = ms;
        values.push(value);
      }
      if (JSON.stringify(values[0]) !== JSON.stringify(values[1])) {
        throw new Error(`The two sides disagree: ${JSON.stringify(values)}`);
      }
      staged.push(times.staged!);
      served.push(times.delivery!);
      ratios.push(times.staged! / times.delivery!);
    }
    return {
      label,
      stagedMs: median(staged),
      deliveryMs: median(served),
      ratio: median(ratios),
    };
  } finally {
    await delivery.stop();
  }
}

async function main(): Promise<void> {
  const rounds = flag("rounds", 3);
  const browserRounds = flag("browser-rounds", 9);
  const packCount = flag("packs", 1000);
  const moduleCount = flag("modules", 10);
  const dir = await Deno.makeTempDir({ prefix: "cordon_staged_bench_" });
  try {
    const packs = `${dir}/packs`;
    await generatePacks(packs, packCount, moduleCount);

    const stages: CommandTiming[] = [];
    const verifies: CommandTiming[] = [];
    for (let round = 0; round < rounds; round++) {
      stages.push(await stage(packs, `${dir}/tree-${round}`));
      verifies.push(await verify(`${dir}/tree-${round}`));
    }
    const tree = `${dir}/tree-0`;
    console.log(
      `Staged tree of ${packCount} packs × ${moduleCount} modules (Deno ${Deno.version.deno}, ${navigator.hardwareConcurrency} CPUs, load ${await loadAverage()}), ${rounds} rounds, medians\n`,
    );
    console.log(`    ${stages[0]!.output}\n    ${verifies[0]!.output}\n`);
    console.log(
      "| command | work (ms, as printed) | wall incl. Deno start (ms) | target |",
    );
    console.log("| --- | ---: | ---: | --- |");
    for (
      const [name, runs] of [["stage", stages], ["verify", verifies]] as const
    ) {
      console.log(
        `| deno task ${name} | ${
          median(runs.map((r) => r.reportedMs)).toFixed(0)
        } | ${median(runs.map((r) => r.wallMs)).toFixed(0)} | < 2000 |`,
      );
    }

    const fixtures = `${ROOT}fixtures/packs`;
    const fixtureTree = `${dir}/fixture-tree`;
    await stage(fixtures, fixtureTree);
    await ensureBundle();
    const site = await siteFolder(dir);
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
      ],
    });
    try {
      const rows = [
        await compareFirstRuns(
          browser,
          "fixture packs (4), declares 2",
          fixtures,
          fixtureTree,
          site,
          {
            source:
              'import { greet } from "greet";\nimport { add } from "@cordon-fixtures/math";\nexport default greet(String(add(1, 2)));',
            packages: ["greet", "@cordon-fixtures/math"],
          },
          browserRounds,
        ),
        await compareFirstRuns(
          browser,
          `generated (${packCount} × ${moduleCount}), declares 3`,
          packs,
          tree,
          site,
          {
            source:
              'import { value as a } from "pack-1";\nimport { value as b } from "pack-2";\nimport { value as c } from "pack-3";\nexport default a + b + c;',
            packages: ["pack-1", "pack-2", "pack-3"],
          },
          browserRounds,
        ),
      ];
      console.log(
        `\nA browser's first run (Chromium ${browser.version()}): new context, loader created, then the timed first run (prefetch + run); ${browserRounds} rounds, alternating order, medians\n`,
      );
      console.log(
        "| packs | staged behind nginx (ms) | delivery server (ms) | staged / delivery | target |",
      );
      console.log("| --- | ---: | ---: | ---: | --- |");
      for (const row of rows) {
        console.log(
          `| ${row.label} | ${row.stagedMs.toFixed(1)} | ${
            row.deliveryMs.toFixed(1)
          } | ${row.ratio.toFixed(2)}× | ≤ 1.0× |`,
        );
      }
    } finally {
      await browser.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

if (import.meta.main) await main();
