/**
 * What a pack's manifest records of the npm package it is made from: the
 * licence its `package.json` states, the licence file copied beside the
 * modules, and the dependencies whose files the bundle inlined.
 *
 * @module
 */

import type { NpmOrigin } from "../protocol/mod.ts";
import type { PackageTree } from "./_npm_fetch.ts";

/** Matches a package's licence file, which its pack holds as `LICENSE`. */
export const LICENSE_FILE = /^licen[cs]e(?:\.(?:md|txt))?$/i;

/** The licence a package's `package.json` states, in any of npm's forms. */
export function licenseOf(manifest: Record<string, unknown>): string {
  const field = manifest.license;
  if (typeof field === "string" && field !== "") return field.slice(0, 200);
  // npm's older forms: an object, or a `licenses` array of them, whose
  // several entries npm's docs write as one expression joined by OR
  // (hogan.js 3 states Apache-2.0 only so).
  const stated = field !== undefined && field !== null
    ? [field]
    : Array.isArray(manifest.licenses)
    ? manifest.licenses
    : [];
  const types = stated.map(licenseType).filter((type) => type !== "");
  if (types.length === 1) return types[0]!.slice(0, 200);
  if (types.length > 1) return `(${types.join(" OR ")})`.slice(0, 200);
  return "UNLICENSED";
}

function licenseType(entry: unknown): string {
  if (typeof entry === "string") return entry;
  if (typeof entry === "object" && entry !== null) {
    const type = (entry as { type?: unknown }).type;
    if (typeof type === "string") return type;
  }
  return "";
}

/**
 * The tree's dependencies whose files the pack's modules hold, read from
 * the comment the bundler writes before each file it inlines
 * (`// node_modules/a/node_modules/b/x.js`, which is b's, the deepest
 * package folder holding it): a types-only package, or one that only a
 * left-out entry imports, is not in the pack. A package another bundles
 * (its `bundleDependencies`) is recorded as that package, whose tarball
 * held its files.
 */
export function bundledRefs(
  tree: PackageTree,
  sources: ReadonlyMap<string, string>,
): NpmOrigin["bundled"] {
  const inlined = new Set<string>();
  for (const source of sources.values()) {
    for (const [, path] of source.matchAll(/^\/\/ (node_modules\/.+)$/gm)) {
      const dir = packageDirOf(path!);
      if (dir !== undefined) inlined.add(dir);
    }
  }
  const refs = new Map<string, NpmOrigin["bundled"][number]>();
  for (const [dir, placed] of tree.placed) {
    if (!inlined.has(dir)) continue;
    // A bundled package's files are its bundler's, checked by that
    // tarball's integrity: the registry has no tarball of them to name.
    const pkg = placed.bundledBy ?? placed;
    if (pkg === tree.root) continue;
    refs.set(`${pkg.name}@${pkg.version}`, {
      name: pkg.name,
      version: pkg.version,
      integrity: pkg.integrity,
    });
  }
  return [...refs.entries()].sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([, ref]) => ref);
}

/** `node_modules/a/node_modules/@s/b` for a file path below that folder. */
function packageDirOf(path: string): string | undefined {
  const cut = path.lastIndexOf("node_modules/");
  const rest = path.slice(cut + "node_modules/".length).split("/");
  const length = rest[0]?.startsWith("@") ? 2 : 1;
  if (rest.length <= length) return undefined;
  return path.slice(0, cut) + "node_modules/" + rest.slice(0, length).join("/");
}
