/**
 * A package's CommonJS `require` of a JSON file by its name without
 * `.json` (`require("./emojis")` for `emojis.json`, `require("./table")`
 * for `table/index.json`), which Node resolves, named by its whole path
 * before the bundler reads it: `deno bundle` looks for JavaScript files
 * only there, so it failed the whole package (node-emoji 2, through its
 * dependency emojilib 2).
 *
 * @module
 */

import type { TarFile } from "./_tar.ts";

// A `require` of a relative path in a string literal. A match in a comment
// or a string is rewritten too, harmlessly: it names the same file.
const RELATIVE_REQUIRE =
  /(\brequire\s*\(\s*)(["'])(\.\.?(?:\/[^"'\n\\]*)?)\2(\s*\))/g;

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
  const bare = specifier.replace(/\/+$/, "");
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

/**
 * The files of one package with each relative `require` that Node
 * resolves to a JSON file naming that file, `.json` included.
 *
 * @param files The package's files, paths relative to its folder.
 * @returns The files, a changed one as a new object.
 */
export function withJsonRequiresNamed(files: readonly TarFile[]): TarFile[] {
  const paths = new Set(files.map((file) => file.path));
  return files.map((file) => {
    if (!COMMON_JS_FILE.test(file.path)) return file;
    const text = textOf(file.bytes);
    if (text === undefined || !text.includes("require")) return file;
    const named = text.replace(
      RELATIVE_REQUIRE,
      (call, open: string, quote: string, specifier: string, close: string) => {
        const json = jsonTarget(specifier, file.path, paths);
        return json === undefined
          ? call
          : `${open}${quote}${json}${quote}${close}`;
      },
    );
    return named === text
      ? file
      : { path: file.path, bytes: new TextEncoder().encode(named) };
  });
}
