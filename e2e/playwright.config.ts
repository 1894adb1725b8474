/**
 * Playwright configuration of cordon's browser leg: Debian's Chromium
 * (Playwright's own browser download does not work here), one worker, and
 * the page server (`e2e/server.ts`) started with the Deno binary in
 * `CORDON_DENO` (default `deno`). Run `deno task bundle` first.
 *
 * Results go to the console and, as JSON, to `PLAYWRIGHT_JSON_OUTPUT_NAME`
 * (default `e2e/test-results/results.json`).
 *
 * @module
 */

import { defineConfig } from "@playwright/test";
import process from "node:process";

const PORT = Number(process.env.CORDON_E2E_PORT ?? 8719);
const DENO = process.env.CORDON_DENO ?? "deno";
const CHROMIUM = process.env.CORDON_CHROMIUM ?? "/usr/bin/chromium";

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
  use: {
    baseURL: `http://127.0.0.1:${PORT}`,
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
  webServer: {
    command:
      `"${DENO}" run --config deno.json --allow-read=. --allow-net=127.0.0.1 e2e/server.ts --port ${PORT}`,
    cwd: "..",
    url: `http://127.0.0.1:${PORT}/api/sandbox-modules`,
    reuseExistingServer: false,
    stdout: "pipe",
    stderr: "pipe",
    timeout: 60_000,
  },
});
