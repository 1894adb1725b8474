/**
 * Playwright configuration of cordon's browser leg: Debian's Chromium
 * (Playwright's own browser download does not work here), one worker, and
 * two page servers. Project `deno` runs every spec against `e2e/server.ts`,
 * started with the Deno binary in `CORDON_DENO` (default `deno`), on
 * `CORDON_E2E_PORT` (default 8719). Project `node` runs the specs whose
 * pages fetch from the delivery routes ({@linkcode NODE_SPECS}) against
 * `e2e/node_server.mjs`, the same routes served by the Node build with
 * `node:http` through `toNodeListener`, started with the `node` of the
 * PATH on `CORDON_E2E_NODE_PORT` (default 8720). Run `deno task bundle`
 * and `deno task build:node` first.
 *
 * Results go to the console and, as JSON, to `PLAYWRIGHT_JSON_OUTPUT_NAME`
 * (default `e2e/test-results/results.json`).
 *
 * @module
 */

import { defineConfig } from "@playwright/test";
import process from "node:process";

const PORT = Number(process.env.CORDON_E2E_PORT ?? 8719);
const NODE_PORT = Number(process.env.CORDON_E2E_NODE_PORT ?? 8720);
const DENO = process.env.CORDON_DENO ?? "deno";
const CHROMIUM = process.env.CORDON_CHROMIUM ?? "/usr/bin/chromium";

/**
 * The specs project `node` runs too: those whose pages read the delivery
 * routes through the remote catalog (the fixture table on the loader and
 * the pool, the bundle's checks of digests, caches and CORS, the offline
 * page and the page that wraps built-ins). The others test the page, the
 * policies or nginx, which the server's runtime does not change.
 */
const NODE_SPECS = [
  "loader.spec.ts",
  "pool.spec.ts",
  "bundle.spec.ts",
  "offline.spec.ts",
  "page_builtins.spec.ts",
];

/** How Playwright starts a page server and knows it is ready. */
function pageServer(command: string, port: number) {
  return {
    command,
    cwd: "..",
    url: `http://127.0.0.1:${port}/api/sandbox-modules`,
    reuseExistingServer: false,
    stdout: "pipe" as const,
    stderr: "pipe" as const,
    timeout: 60_000,
  };
}

export default defineConfig({
  testDir: ".",
  testMatch: "*.spec.ts",
  outputDir: "test-results/artifacts",
  workers: 1,
  fullyParallel: false,
  forbidOnly: Boolean(process.env.CI),
  retries: 0,
  timeout: 60_000,
  reporter: [
    ["list"],
    [
      "json",
      {
        outputFile: process.env.PLAYWRIGHT_JSON_OUTPUT_NAME ??
          "test-results/results.json",
      },
    ],
  ],
  projects: [
    { name: "deno", use: { baseURL: `http://127.0.0.1:${PORT}` } },
    {
      name: "node",
      testMatch: NODE_SPECS,
      use: { baseURL: `http://127.0.0.1:${NODE_PORT}` },
    },
  ],
  use: {
    browserName: "chromium",
    headless: true,
    launchOptions: {
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
    },
  },
  webServer: [
    pageServer(
      `"${DENO}" run --config deno.json --allow-read=. --allow-net=127.0.0.1 e2e/server.ts --port ${PORT}`,
      PORT,
    ),
    pageServer(`node e2e/node_server.mjs --port ${NODE_PORT}`, NODE_PORT),
  ],
});
