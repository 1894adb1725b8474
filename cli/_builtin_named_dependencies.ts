/**
 * Points the bundler at the npm packages of a tree named like a Node
 * built-in (`buffer`, `events`, `process`, `punycode`), as browser bundlers
 * resolve such a name from `node_modules` when a package there has it.
 * `deno bundle` takes a built-in's name for the built-in even with
 * `--platform=browser` and the package installed, so readable-stream's
 * `require("buffer")` (and `safe-buffer`'s, which relies on the `buffer`
 * its dependents install) became `require("node:buffer")` and its browser
 * build could not load. A `browser` field entry mapping the name to
 * `name/` (a path, never a built-in) makes the bundler take the installed
 * package instead; an entry the package's own `browser` field has for that
 * name is kept. A string `browser` field (graphology's) names the main file
 * for browsers; it becomes that object with `module` and `main` naming its
 * file, as the bundler would otherwise read the object past it.
 *
 * @module
 */

import { isNodeCompatSpecifier } from "../policy/import_specifier.ts";

/**
 * The names of built-in-named packages that Node's lookup reaches from the
 * package in `dir` (`node_modules/a/node_modules/b`): those in its own
 * `node_modules` and in every folder's above it.
 *
 * @param dir The package's folder in the tree.
 * @param placed The folders of every package in the tree.
 * @returns The names, sorted.
 */
export function reachableBuiltinNames(
  dir: string,
  placed: Iterable<string>,
): string[] {
  const names = new Set<string>();
  for (const other of placed) {
    const cut = other.lastIndexOf("node_modules/");
    const name = other.slice(cut + "node_modules/".length);
    if (name.includes("/") || !isNodeCompatSpecifier(name)) continue;
    const parent = other.slice(0, cut);
    if (`${dir}/`.startsWith(parent)) names.add(name);
  }
  return [...names].sort();
}

/**
 * A package's `package.json` as the bundler should read it: its `browser`
 * field maps each of `names` it does not map already to the installed
 * package.
 *
 * @param manifest The package's `package.json`, parsed.
 * @param names The built-in-named packages its lookup reaches.
 * @returns The text to write in its place, or `null` when nothing changes.
 */
export function manifestForBundler(
  manifest: Record<string, unknown>,
  names: readonly string[],
): string | null {
  const browser = manifest.browser;
  const mapped = typeof browser === "object" && browser !== null
    ? browser as Record<string, unknown>
    : {};
  const added = names.filter((name) => !Object.hasOwn(mapped, name));
  if (added.length === 0) return null;
  return JSON.stringify({
    ...manifest,
    ...mainFieldsOf(browser),
    browser: {
      ...mapped,
      ...Object.fromEntries(added.map((name) => [name, `${name}/`])),
    },
  });
}

/**
 * The main fields that keep a string `browser` field's file as the
 * package's main once that field becomes an object: the bundler reads
 * `browser`, then `module`, then `main`, and an object is no main file, so
 * both later fields name the file the string named (graphology's UMD build).
 */
function mainFieldsOf(browser: unknown): Record<string, string> {
  return typeof browser === "string" ? { module: browser, main: browser } : {};
}
