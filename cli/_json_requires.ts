/**
 * A package's CommonJS `require` of a JSON file by its name without
 * `.json` (`require("./emojis")` for `emojis.json`, `require("./table")`
 * for `table/index.json`), which Node resolves, named by its whole path
 * before the bundler reads it: `deno bundle` looks for JavaScript files
 * only there, so it failed the whole package (node-emoji 2, through its
 * dependency emojilib 2). A `require` of a package by its name
 * (`require("spdx-license-ids")`, `require("spdx-license-ids/deprecated")`)
 * is named so too when Node loads a JSON file of that package for it: one
 * whose entry is an `index.json` with no `main` failed every package that
 * depends on it (spdx-expression-parse, spdx-correct).
 *
 * @module
 */

import type { TarFile } from "./_tar.ts";

// A `require` of a relative path in a string literal. A match in a comment
// or a string is rewritten too, harmlessly: it names the same file.
const RELATIVE_REQUIRE =
  /(\brequire\s*\(\s*)(["'])(\.\.?(?:\/[^"'\n\\]*)?)\2(\s*\))/g;

// A `require` of a package by its name, with the scope and a subpath if
// any: `require("a")`, `require("@s/a/data")`. Relative paths start with a
// dot and are the rule above's.
const PACKAGE_REQUIRE =
  /(\brequire\s*\(\s*)(["'])((?:@[^"'\n\\/]+\/)?[^"'\n\\/.][^"'\n\\/]*)(\/[^"'\n\\]*)?\2(\s*\))/g;

const COMMON_JS_FILE = /\.(?:js|cjs)$/;

// A specifier Node loads as a folder only: one that ends in `/`, `.` or
// `..` as its last segment (`require("..")` is the parent's index.js, never
// a JSON file named like the parent beside it).
const FOLDER_ONLY = /(?:^|\/)\.{0,2}$/;

// A file that is not UTF-8 is left as it is, byte for byte.
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

function textOf(bytes: Uint8Array): string | undefined {
  try {
    return utf8.decode(bytes);
  } catch {
    return undefined;
  }
}

/**
 * `specifier` without the slashes it ends with, found by a scan: `/\/+$/`
 * would start again at each slash of a long run that something else
 * follows, in time quadratic in its length.
 */
function withoutTrailingSlashes(specifier: string): string {
  let end = specifier.length;
  while (end > 0 && specifier[end - 1] === "/") end--;
  return specifier.slice(0, end);
}

/** `path` normalised, or `undefined` when it climbs out of the package. */
function normalised(path: string): string | undefined {
  const parts: string[] = [];
  for (const part of path.split("/")) {
    if (part === "" || part === ".") continue;
    if (part !== "..") parts.push(part);
    else if (parts.pop() === undefined) return undefined;
  }
  return parts.join("/");
}

/**
 * The specifier naming the JSON file Node's `require` loads for
 * `specifier`, or `undefined` when it loads another file first (the file
 * itself, `.js`, a folder's `package.json` or `index.js`) or none.
 */
function jsonTarget(
  specifier: string,
  from: string,
  paths: ReadonlySet<string>,
): string | undefined {
  const folder = from.split("/").slice(0, -1).join("/");
  const target = normalised(`${folder}/${specifier}`);
  if (target === undefined) return undefined;
  const bare = withoutTrailingSlashes(specifier);
  const asFile = !FOLDER_ONLY.test(specifier) && target !== "";
  if (asFile && (paths.has(target) || paths.has(`${target}.js`))) {
    return undefined;
  }
  if (asFile && paths.has(`${target}.json`)) return `${bare}.json`;
  const inside = target === "" ? "" : `${target}/`;
  if (paths.has(`${inside}package.json`) || paths.has(`${inside}index.js`)) {
    return undefined;
  }
  return paths.has(`${inside}index.json`) ? `${bare}/index.json` : undefined;
}

/** A package of the tree, as far as Node's `require` of its name reads it. */
export interface TreePackage {
  /** Its `package.json`, parsed. */
  manifest: Record<string, unknown>;
  /** Its files, by path inside the package. */
  files: readonly TarFile[];
}

/** Where a package sits in its tree, for the packages its files require. */
export interface TreePlace {
  /** The package's folder in the tree, `node_modules/<name>`. */
  dir: string;
  /** Every package of the tree by folder, as npm laid them out. */
  placed: ReadonlyMap<string, TreePackage>;
}

const NODE_MODULES = "node_modules";

/**
 * The tree's folders by the package name each may hold: its last segment,
 * and its last two when those are `@scope/name`. Built once per package,
 * so that a lookup reads the folders of one name only.
 */
function foldersByName(
  placed: ReadonlyMap<string, TreePackage>,
): Map<string, string[]> {
  const byName = new Map<string, string[]>();
  const add = (name: string, folder: string) => {
    const folders = byName.get(name);
    if (folders === undefined) byName.set(name, [folder]);
    else folders.push(folder);
  };
  for (const folder of placed.keys()) {
    const last = folder.lastIndexOf("/");
    add(folder.slice(last + 1), folder);
    const scope = last > 0 ? folder.lastIndexOf("/", last - 1) : -1;
    if (last > 0 && folder[scope + 1] === "@") {
      add(folder.slice(scope + 1), folder);
    }
  }
  return byName;
}

/**
 * How deep up the tree from `from` a folder `node_modules/<name>` sits that
 * Node's `require` would look in, or -1 when it would not: at the root, 0;
 * in an ancestor of `from` (or `from` itself) that is no `node_modules`,
 * one more than that ancestor's length.
 */
function depthSeen(folder: string, name: string, from: string): number {
  const tail = `${NODE_MODULES}/${name}`;
  if (!folder.endsWith(tail)) return -1;
  const prefix = folder.slice(0, folder.length - tail.length);
  if (prefix === "") return 0;
  if (from === "" || !prefix.endsWith("/")) return -1;
  const base = prefix.slice(0, -1);
  const above = from === base || from.startsWith(prefix);
  const lastSegment = base.slice(base.lastIndexOf("/") + 1);
  return above && lastSegment !== NODE_MODULES ? base.length + 1 : -1;
}

/**
 * The folder of the package `name` that Node's `require` finds from the
 * folder `from`: the nearest `node_modules/<name>` up the tree. Only the
 * tree's folders of that name are read: building the path of each level up
 * from a deep `from` took time quadratic in its depth for every `require`.
 */
function packageFolder(
  name: string,
  from: string,
  byName: ReadonlyMap<string, readonly string[]>,
): string | undefined {
  let nearest: string | undefined;
  let nearestDepth = -1;
  for (const folder of byName.get(name) ?? []) {
    const depth = depthSeen(folder, name, from);
    if (depth > nearestDepth) {
      nearest = folder;
      nearestDepth = depth;
    }
  }
  return nearest;
}

/**
 * The specifier naming the JSON file Node's `require` loads for the package
 * `name` and its `subpath` (empty or `/...`), or `undefined` when it loads
 * another file, the package's `exports` or `main` decide, or the tree has
 * no such package.
 */
function packageJsonTarget(
  name: string,
  subpath: string,
  from: string,
  placed: ReadonlyMap<string, TreePackage>,
  byName: ReadonlyMap<string, readonly string[]>,
): string | undefined {
  const folder = packageFolder(name, from, byName);
  const pkg = folder === undefined ? undefined : placed.get(folder);
  if (pkg === undefined || pkg.manifest.exports !== undefined) {
    return undefined;
  }
  const paths = new Set(pkg.files.map((file) => file.path));
  if (subpath !== "") {
    const json = jsonTarget(`.${subpath}`, "", paths);
    return json === undefined ? undefined : `${name}${json.slice(1)}`;
  }
  if (pkg.manifest.main !== undefined || paths.has("index.js")) {
    return undefined;
  }
  return paths.has("index.json") ? `${name}/index.json` : undefined;
}

/**
 * The files of one package with each `require` that Node resolves to a
 * JSON file naming that file, `.json` included: a relative one, and, when
 * `place` says where the package sits in its tree, one of a package by its
 * name.
 *
 * @param files The package's files, paths relative to its folder.
 * @param place The package's folder and the tree's packages.
 * @returns The files, a changed one as a new object.
 */
export function withJsonRequiresNamed(
  files: readonly TarFile[],
  place?: TreePlace,
): TarFile[] {
  const paths = new Set(files.map((file) => file.path));
  const byName = place === undefined ? undefined : foldersByName(place.placed);
  return files.map((file) => {
    if (!COMMON_JS_FILE.test(file.path)) return file;
    const text = textOf(file.bytes);
    if (text === undefined || !text.includes("require")) return file;
    let named = text.replace(
      RELATIVE_REQUIRE,
      (call, open: string, quote: string, specifier: string, close: string) => {
        const json = jsonTarget(specifier, file.path, paths);
        return json === undefined
          ? call
          : `${open}${quote}${json}${quote}${close}`;
      },
    );
    if (place !== undefined && byName !== undefined) {
      const from = `${place.dir}/${file.path}`.split("/").slice(0, -1)
        .join("/");
      named = named.replace(
        PACKAGE_REQUIRE,
        (
          call,
          open: string,
          quote: string,
          name: string,
          sub: string | undefined,
          close: string,
        ) => {
          const json = packageJsonTarget(
            name,
            sub ?? "",
            from,
            place.placed,
            byName,
          );
          return json === undefined
            ? call
            : `${open}${quote}${json}${quote}${close}`;
        },
      );
    }
    return named === text
      ? file
      : { path: file.path, bytes: new TextEncoder().encode(named) };
  });
}
