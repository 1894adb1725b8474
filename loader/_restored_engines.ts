// This module is browser compatible.

/**
 * A private entry of the Node build: `deno task build:node` bundles it with
 * the public entries, so it shares their copy of the engine, and its
 * package.json does not export it. `loader/node_test/` reads through it how
 * many engines of the process restored the hardened image, which tells
 * whether the build's image fits its own hardening scripts; the browser
 * leg's entry (`e2e/browser_entry.ts`) exports it to its pages for the
 * same check of `dist/cordon.js`.
 *
 * @module
 */

export { restoredEngineCount } from "./_engine.ts";
