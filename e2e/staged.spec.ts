/**
 * The browser leg of the fixture table through the staged catalog: the
 * fixture packs are staged (`cli/stage.ts`, run with the Deno binary in
 * `CORDON_DENO`) into a temporary folder, nginx serves that tree configured
 * from the tree's own `_nginx.conf` (plus the test page and the bundles,
 * so they share its origin), and every case runs in Chromium through the
 * bundle's QuickJS loader and staged catalog, compared with the same
 * expected data `deno test` uses. No cordon code answers any request.
 *
 * @module
 */

import assert from "node:assert/strict";
import { copyFile, mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "@playwright/test";
import {
  CASES,
  checkCaseInPage,
  type CordonPage,
  openBundlePage,
} from "./_fixture_page.ts";
import { stageFixturePacks, startNginx, type StaticServer } from "./nginx.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));

/** The page's files, copied into the site folder nginx serves at `/`. */
const SITE_FILES = [
  ["e2e/index.html", "index.html"],
  ["e2e/page.js", "page.js"],
  ["dist/cordon.js", "dist/cordon.js"],
  ["dist/cordon-runner.js", "dist/cordon-runner.js"],
] as const;

let work: string;
let server: StaticServer;
let cordonPage: CordonPage;

test.describe("the fixture table through the staged catalog behind nginx", () => {
  test.beforeAll(async ({ browser }) => {
    work = await mkdtemp(join(tmpdir(), "cordon-staged-e2e-"));
    const tree = join(work, "tree");
    stageFixturePacks(tree);
    const site = join(work, "site");
    await mkdir(join(site, "dist"), { recursive: true });
    for (const [from, to] of SITE_FILES) {
      await copyFile(join(ROOT, from), join(site, to));
    }
    server = await startNginx({ treeDir: tree, siteDir: site });
    const page = await browser.newPage({ baseURL: server.origin });
    const { errors, loadError } = await openBundlePage(page);
    if (loadError !== null) throw new Error(loadError);
    cordonPage = { page, errors };
  });

  test.afterAll(async () => {
    await cordonPage?.page.close();
    await server?.stop();
    if (work !== undefined) await rm(work, { recursive: true, force: true });
  });

  test("nginx sends the headers of the generated snippet", async () => {
    const { page } = cordonPage;
    const answer = await page.evaluate(async () => {
      const index = await fetch("/index.json");
      const entry = (await index.json()).packs[0];
      const pack = await fetch(`/packs/${entry.name}.json`);
      const hidden = await fetch("/_nginx.conf");
      return {
        index: [
          index.headers.get("cache-control"),
          index.headers.get("content-type"),
        ],
        pack: [pack.status, pack.headers.get("cache-control")],
        hidden: hidden.status,
      };
    });
    assert.deepEqual(answer, {
      index: ["no-cache", "application/json; charset=utf-8"],
      pack: [200, "no-cache"],
      hidden: 404,
    });
  });

  for (const entry of CASES) {
    test(entry.name, async () => {
      await checkCaseInPage(cordonPage, entry, "runFixtureCaseStaged");
    });
  }
});
