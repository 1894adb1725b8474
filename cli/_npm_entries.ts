/**
 * Which files of an npm package the pack command bundles: the package's
 * `exports` (or its `browser` / `module` / `main` field when it has none),
 * read with the conditions a browser bundler applies, since a sandbox has
 * no Node built-ins.
 *
 * @module
 */

import { isPackSubpath } from "../protocol/ids.ts";

/**
 * The conditions an `exports` target is chosen by, as a browser bundler
 * for a Web Worker: a sandbox has no DOM, so a `worker` build listed before
 * a `browser` one is the one to take.
 */
const CONDITIONS: ReadonlySet<string> = new Set([
  "worker",
  "browser",
  "import",
  "module",
  "default",
]);
const SCRIPT = /\.(?:js|mjs|cjs)$/;
const DOT_SEGMENT = /(?:^|\/)\.\.?(?:\/|$)/;

/**
 * How deep an `exports` value may nest conditions and fallback arrays.
 * Packages nest a few levels (`import` then `types` and `default`, or
 * `node` then `production`); the readers below recurse once a level, so a
 * map nested far deeper would overflow the stack.
 */
const MAX_EXPORTS_DEPTH = 32;

/** A package's `exports` field that cannot be read: it is malformed. */
export class InvalidExports extends Error {}

/** An entry point: the subpath guest code imports and the file behind it. */
export interface EntryPoint {
  /** `.` or `./name`. */
  subpath: string;
  /** The file inside the package, `/`-separated, without `./`. */
  file: string;
  /**
   * The package's other builds of this subpath, in the order bundlers
   * prefer them, to pack when `file` cannot work in a sandbox.
   */
  alternatives: string[];
  /**
   * The files of this subpath that are the package's builds for browsers
   * (under a `browser` or `worker` condition, or named by its `browser`
   * field), which `file` may be one of.
   */
  browserFiles: string[];
  /** What the packer found on the way to `file`, for the report. */
  notes: string[];
  /**
   * Bundled by itself instead of with the other entries, as it threw at
   * import in the build it shared with them.
   */
  alone?: boolean;
}

/** What choosing entry points found: the entries and the subpaths skipped. */
export interface EntrySelection {
  entries: EntryPoint[];
  /** Subpaths the package exports that cannot be a pack entry, and why. */
  skipped: { subpath: string; reason: string }[];
}

/**
 * Every target an `exports` value gives under the browser bundler's
 * conditions, the one a bundler picks first, then the ones it would fall
 * to if the conditions before them were absent. `null` when the first
 * condition that matches maps the subpath to `null`: Node and bundlers
 * stop there and refuse it (`"./net": { "browser": null, "default": ... }`
 * in @mswjs/interceptors), so the targets after it are not fallbacks.
 */
function conditionalTargets(value: unknown): string[] | null {
  if (value === null) return null;
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) {
    // An array is a list of fallbacks: the first valid target wins.
    for (const item of value) {
      const targets = conditionalTargets(item);
      if (targets !== null && targets.length > 0) return targets;
    }
    return [];
  }
  const targets: string[] = [];
  if (typeof value === "object") {
    for (const [condition, inner] of Object.entries(value)) {
      if (!CONDITIONS.has(condition)) continue;
      const found = conditionalTargets(inner);
      if (found === null) return targets.length === 0 ? null : targets;
      targets.push(...found);
    }
  }
  return targets;
}

/**
 * The targets an `exports` value gives under a `browser` or `worker`
 * condition: the package's own builds for browsers.
 */
function browserTargets(value: unknown, under = false): string[] {
  if (typeof value === "string") return under ? [value] : [];
  if (typeof value !== "object" || value === null) return [];
  if (Array.isArray(value)) {
    return value.flatMap((item) => browserTargets(item, under));
  }
  return Object.entries(value).flatMap(([condition, inner]) =>
    CONDITIONS.has(condition)
      ? browserTargets(
        inner,
        under || condition === "browser" || condition === "worker",
      )
      : []
  );
}

/** Whether a value nests objects or arrays more than `max` levels deep. */
function nestsDeeperThan(value: unknown, max: number): boolean {
  // Walked with a stack of its own, as the depth is what is in question.
  const pending: [unknown, number][] = [[value, 0]];
  while (pending.length > 0) {
    const [current, depth] = pending.pop()!;
    if (typeof current !== "object" || current === null) continue;
    if (depth >= max) return true;
    for (const inner of Object.values(current)) {
      pending.push([inner, depth + 1]);
    }
  }
  return false;
}

/**
 * The `exports` field as subpath → target, or `null` when there is none.
 *
 * @throws {InvalidExports} When a subpath's value nests deeper than
 * {@linkcode MAX_EXPORTS_DEPTH}.
 */
function exportsMap(
  manifest: Record<string, unknown>,
): Map<string, unknown> | null {
  const field = manifest.exports;
  if (field === undefined || field === null) return null;
  const map = typeof field === "object" && !Array.isArray(field) &&
      Object.keys(field).some((key) => key.startsWith("."))
    ? new Map(Object.entries(field))
    : new Map([[".", field]]);
  for (const [subpath, value] of map) {
    if (nestsDeeperThan(value, MAX_EXPORTS_DEPTH)) {
      throw new InvalidExports(
        `its exports map is nested over ${MAX_EXPORTS_DEPTH} levels deep for ${
          JSON.stringify(subpath.slice(0, 80))
        }, past any package's conditions; pack another version, or report it to the package's authors`,
      );
    }
  }
  return map;
}

/**
 * The value `exports` gives a subpath: its own key, else the pattern key
 * (`./*`, `./lib/*.js`) that matches it with the longest prefix, with each
 * `*` of the pattern's targets replaced by the part it matched, as Node
 * resolves it. `undefined` when nothing matches.
 */
function exportsValue(
  map: Map<string, unknown>,
  subpath: string,
): unknown {
  if (map.has(subpath)) return map.get(subpath);
  let best: { key: string; match: string } | undefined;
  for (const key of map.keys()) {
    const star = key.indexOf("*");
    if (star === -1 || star !== key.lastIndexOf("*")) continue;
    const prefix = key.slice(0, star);
    const suffix = key.slice(star + 1);
    if (
      subpath.length < key.length || !subpath.startsWith(prefix) ||
      !subpath.endsWith(suffix)
    ) continue;
    if (
      best !== undefined &&
      (best.key.indexOf("*") > star ||
        (best.key.indexOf("*") === star && best.key.length >= key.length))
    ) continue;
    best = {
      key,
      match: subpath.slice(prefix.length, subpath.length - suffix.length),
    };
  }
  if (best === undefined || DOT_SEGMENT.test(best.match)) return undefined;
  const match = best.match;
  const substitute = (value: unknown): unknown => {
    if (typeof value === "string") return value.replaceAll("*", match);
    if (Array.isArray(value)) return value.map(substitute);
    if (typeof value === "object" && value !== null) {
      return Object.fromEntries(
        Object.entries(value).map(([k, v]) => [k, substitute(v)]),
      );
    }
    return value;
  };
  return substitute(map.get(best.key));
}

/**
 * The file a package's `browser` object puts in place of one of its own
 * files, as bundlers read it (`{ "./dist/x.node.mjs": "./dist/x.browser.mjs" }`),
 * `false` when it disables the file, or the file itself.
 */
function browserReplacement(
  manifest: Record<string, unknown>,
  file: string,
  has: (path: string) => boolean,
): string | false {
  const field = manifest.browser;
  if (typeof field !== "object" || field === null || Array.isArray(field)) {
    return file;
  }
  for (const [from, to] of Object.entries(field)) {
    // Bare names (`"fs": false`) are the bundler's, for the imports it sees.
    if (!from.startsWith(".")) continue;
    const key = joinInside("", from);
    if (key === null || (key !== file && probe(key, has) !== file)) continue;
    if (to === false) return false;
    const target = typeof to === "string" ? joinInside("", to) : null;
    return (target === null ? null : probe(target, has)) ?? file;
  }
  return file;
}

function normalise(target: string): string {
  return target.replace(/^\.\//, "");
}

/** Finds a file as a bundler does: as is, then `.js`, `.mjs`, `/index.js`. */
function probe(file: string, has: (path: string) => boolean): string | null {
  for (
    const candidate of [file, `${file}.js`, `${file}.mjs`, `${file}/index.js`]
  ) {
    if (has(candidate)) return candidate;
  }
  return null;
}

/** Joins a folder and a relative path, resolving `.` and `..` inside the package. */
function joinInside(folder: string, target: string): string | null {
  const parts = folder === "" ? [] : folder.split("/");
  for (const part of target.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") {
      if (parts.length === 0) return null;
      parts.pop();
    } else parts.push(part);
  }
  return parts.join("/");
}

/**
 * The file a folder's own `package.json` names, as Node and bundlers read
 * a subpath of a package without `exports` (`fp-ts/function` is a folder
 * whose `package.json` says `"module": "../es6/function.js"`).
 */
function folderMain(
  folder: string,
  has: (path: string) => boolean,
  readText: (path: string) => string | undefined,
): string | null {
  const text = readText(`${folder}/package.json`);
  if (text === undefined) return null;
  let manifest: unknown;
  try {
    manifest = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof manifest !== "object" || manifest === null) return null;
  const main = mainField(manifest as Record<string, unknown>);
  const joined = main === null ? null : joinInside(folder, main);
  return joined === null ? null : probe(joined, has);
}

/** The files a `package.json` without `exports` names, by bundlers' order. */
function mainFields(manifest: Record<string, unknown>): string[] {
  const files: string[] = [];
  for (const field of ["browser", "module", "main"]) {
    const value = manifest[field];
    if (typeof value === "string" && value !== "") files.push(value);
  }
  return files;
}

function mainField(manifest: Record<string, unknown>): string | null {
  return mainFields(manifest)[0] ?? null;
}

function legacyMains(manifest: Record<string, unknown>): string[] {
  const files = mainFields(manifest);
  return files.length > 0 ? files : ["index.js"];
}

/**
 * Chooses the entry points of a package.
 *
 * @param manifest Its `package.json`.
 * @param has Whether the package has a file.
 * @param wanted The subpaths the operator named, or `undefined` for all.
 * @param readText A file of the package as text, or `undefined`; it reads
 * the `package.json` of a subpath folder when the package has no `exports`.
 * @returns The entries, sorted by subpath, and the subpaths left out.
 * @throws {InvalidExports} When its `exports` nest too deep to read.
 * @throws {Error} When a named subpath is not one the package offers.
 */
export function chooseEntries(
  manifest: Record<string, unknown>,
  has: (path: string) => boolean,
  wanted: readonly string[] | undefined,
  readText: (path: string) => string | undefined = () => undefined,
): EntrySelection {
  const entries: EntryPoint[] = [];
  const skipped: EntrySelection["skipped"] = [];
  const map = exportsMap(manifest);
  const subpaths = wanted ?? (map === null ? ["."] : [...map.keys()]);
  for (const subpath of subpaths) {
    const skip = (reason: string) => skipped.push({ subpath, reason });
    if (subpath === "./package.json" && wanted === undefined) continue;
    if (subpath.includes("*")) {
      skip("is a pattern; name the subpaths you want with --subpaths");
      continue;
    }
    if (!isPackSubpath(subpath)) {
      skip(
        "is not a subpath a pack can export (. or ./name, without . or .. segments)",
      );
      continue;
    }
    let targets: string[];
    let forBrowsers: string[] = [];
    if (map !== null) {
      const value = exportsValue(map, subpath);
      // A null target hides a subpath a pattern would match.
      if (value === undefined || (value === null && wanted !== undefined)) {
        throw new Error(
          `the package does not export ${JSON.stringify(subpath)}`,
        );
      }
      if (value === null) {
        skip("is not exported: the package's exports map it to null");
        continue;
      }
      const found = conditionalTargets(value);
      if (found === null) {
        skip(
          "is not for browsers: the package's exports map it to null under a browser condition",
        );
        continue;
      }
      targets = found;
      forBrowsers = browserTargets(value);
      if (targets.length === 0) {
        skip("has no browser, import or default target");
        continue;
      }
    } else {
      targets = subpath === "." ? legacyMains(manifest) : [subpath];
      if (subpath === "." && typeof manifest.browser === "string") {
        forBrowsers = [manifest.browser];
      }
    }
    const find = (target: string) => {
      const path = normalise(target);
      return probe(path, has) ??
        (map === null ? folderMain(path, has, readText) : null);
    };
    const locate = (target: string) => {
      const found = find(target);
      return found === null || map !== null
        ? found
        : browserReplacement(manifest, found, has);
    };
    const file = locate(targets[0]!);
    const browserFiles = forBrowsers.map(locate).filter((found) =>
      typeof found === "string"
    );
    // A file the browser field puts in place of another is a browser build.
    if (
      typeof file === "string" && map === null && file !== find(targets[0]!)
    ) browserFiles.push(file);
    if (file === false) {
      skip("is disabled by the package's browser field");
      continue;
    }
    if (file === null) {
      if (wanted !== undefined) {
        throw new Error(
          `the package has no file for ${JSON.stringify(subpath)}`,
        );
      }
      skip("names a file the package does not contain");
      continue;
    }
    if (!SCRIPT.test(file)) {
      skip("is not JavaScript");
      continue;
    }
    const alternatives: string[] = [];
    for (const target of targets.slice(1)) {
      const other = locate(target);
      if (
        typeof other === "string" && SCRIPT.test(other) && other !== file &&
        !alternatives.includes(other)
      ) alternatives.push(other);
    }
    entries.push({ subpath, file, alternatives, browserFiles, notes: [] });
  }
  entries.sort((a, b) =>
    a.subpath < b.subpath ? -1 : a.subpath > b.subpath ? 1 : 0
  );
  // Bundled modules are named after their file without its extension, so
  // `x.mjs` and `x.js` cannot both be entries; the first subpath keeps it.
  const byStem = new Map<string, EntryPoint>();
  const kept = entries.filter((entry) => {
    const stem = entry.file.replace(SCRIPT, "");
    const first = byStem.get(stem);
    if (first === undefined) {
      byStem.set(stem, entry);
      return true;
    }
    if (first.file === entry.file) return true;
    skipped.push({
      subpath: entry.subpath,
      reason: `is another build of ${first.subpath} (${entry.file})`,
    });
    return false;
  });
  return { entries: kept, skipped };
}
