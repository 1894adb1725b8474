/**
 * Writes `dist/node/package.json`, which makes the Node build a package a
 * Node project installs by path (`npm install ./dist/node`) and imports by
 * name: `@cordon/cordon`, `@cordon/cordon/loader` and every other entry of
 * `deno.json`'s `exports` that `deno task build:node` built, each mapped to
 * its file and, under the `types` condition, to the declarations
 * tools/write_node_types.ts wrote beside it. npm refuses a folder whose
 * package.json has no name, and Node and TypeScript resolve only the
 * subpaths `exports` lists.
 *
 * Usage: `deno run --allow-read=. --allow-write=dist tools/write_node_package.ts`
 * (`deno task build:node` runs it, after the bundle).
 *
 * @module
 */

import { fileURLToPath } from "node:url";

// Paths, not URL paths: a checkout's folder may hold a space, `#` or `é`.
const ROOT = fileURLToPath(new URL("../", import.meta.url));
const OUT = `${ROOT}dist/node/`;

/** The Node the build runs on: the pool's runners need 20.16 or later. */
export const NODE_ENGINES = ">=20.16";

/** The fields of `deno.json` the package takes. */
export interface DenoPackageConfig {
  /** The package's name, `@cordon/cordon`. */
  name: string;
  /** Its version. */
  version: string;
  /** Its licence. */
  license: string;
  /** Each subpath (`.`, `./loader`) and the TypeScript module it names. */
  exports: Record<string, string>;
}

/**
 * The package.json of the Node build: the subpaths of `config.exports`
 * whose module was built, each mapped to the built `.js` file at the same
 * path (and its `.d.ts` under `types`, when the build holds one), and
 * `./package.json`.
 *
 * @param config `deno.json`'s name, version, licence and exports.
 * @param isBuilt Whether the build holds a file, by its path in the build.
 * @returns The package.json's fields.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { nodePackageJson } from "./write_node_package.ts";
 *
 * const pkg = nodePackageJson(
 *   {
 *     name: "@cordon/cordon",
 *     version: "0.1.0",
 *     license: "MIT",
 *     exports: { ".": "./mod.ts", "./cli/run": "./cli/run.ts" },
 *   },
 *   (path) => path === "./mod.js" || path === "./mod.d.ts",
 * );
 * assert.deepEqual(pkg.exports, {
 *   ".": { types: "./mod.d.ts", default: "./mod.js" },
 *   "./package.json": "./package.json",
 * });
 * ```
 */
export function nodePackageJson(
  config: DenoPackageConfig,
  isBuilt: (path: string) => boolean,
): Record<string, unknown> {
  const exports: Record<string, string | Record<string, string>> = {};
  for (const [subpath, module] of Object.entries(config.exports)) {
    const built = module.replace(/\.ts$/, ".js");
    const types = module.replace(/\.ts$/, ".d.ts");
    if (!isBuilt(built)) continue;
    // TypeScript reads the first condition it knows, so `types` leads.
    exports[subpath] = isBuilt(types) ? { types, default: built } : built;
  }
  exports["./package.json"] = "./package.json";
  return {
    name: config.name,
    version: config.version,
    license: config.license,
    type: "module",
    engines: { node: NODE_ENGINES },
    exports,
  };
}

function isFile(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

if (import.meta.main) {
  const config = JSON.parse(
    await Deno.readTextFile(`${ROOT}deno.json`),
  ) as DenoPackageConfig;
  const pkg = nodePackageJson(config, (path) => isFile(`${OUT}${path}`));
  await Deno.writeTextFile(
    `${OUT}package.json`,
    JSON.stringify(pkg, null, 2) + "\n",
  );
}
