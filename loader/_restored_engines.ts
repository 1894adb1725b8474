// This module is browser compatible.

/**
 * A private entry of the Node build: `deno task build:node` bundles it with
 * the public entries, so it shares their copy of the engine, and its
 * package.json does not export it. `loader/node_test/` reads through it how
 * many engines of the process restored the hardened image, which tells
 * whether the build's image fits its own hardening scripts.
 *
 * @module
 */

export { restoredEngineCount } from "./_engine.ts";
