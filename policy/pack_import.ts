// This module is browser compatible.

/**
 * Where a relative import from a pack module leads: the one rule pack
 * discovery and the loader's import policy apply to keep a pack's imports
 * inside the pack.
 *
 * @module
 */

import { hasEncodedPathChar } from "./_path_chars.ts";

/**
 * The reason {@linkcode resolvePackImport} gives a bare specifier; unlike a
 * path that leaves the pack, a bare name is safe to repeat in a message.
 */
export const BARE_SPECIFIER_REASON =
  "is a bare specifier, not a file of this pack";

/** Where a relative import from a pack module leads. */
export type PackImportResolution =
  | {
    /** Always `true`. */
    ok: true;
    /** The declared file it names, such as `./lib/round.js`. */
    path: string;
  }
  | {
    /** Always `false`. */
    ok: false;
    /** `PACK_IMPORT_ESCAPE` or `PACK_IMPORT_UNDECLARED`. */
    code: "PACK_IMPORT_ESCAPE" | "PACK_IMPORT_UNDECLARED";
    /** Why, as a clause: `leaves the pack`. */
    reason: string;
  };

// Two virtual roots: an import that climbs above the root and names its way
// back in can match at most one of them, so it is caught either way.
const ROOTS = ["/cordon-pack-a/", "/cordon-pack-b/"] as const;
// Control characters are what this pattern is for: URL parsing drops some.
// deno-lint-ignore no-control-regex
const CONTROL_OR_BACKSLASH = /[\u0000-\u001f\u007f\\]/;
// deno-lint-ignore no-control-regex
const ENCODED_SEPARATOR = /[/\\\u0000]/;

function escape(reason: string): PackImportResolution {
  return { ok: false, code: "PACK_IMPORT_ESCAPE", reason };
}

function undeclared(reason: string): PackImportResolution {
  return { ok: false, code: "PACK_IMPORT_UNDECLARED", reason };
}

// Specifiers of unreserved characters only resolve by plain segment
// arithmetic, which gives what URL parsing gives without its cost; anything
// else (percent escapes, spaces, ?, #) goes through URL parsing.
const PLAIN = /^[A-Za-z0-9_.\-/]+$/;

function resolvePlain(
  specifier: string,
  referrer: string,
): string[] | PackImportResolution {
  const out = referrer.slice(2).split("/");
  out.pop();
  const parts = specifier.split("/");
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    const last = i === parts.length - 1;
    if (part === "." || part === "..") {
      if (part === "..") {
        if (out.length === 0) return escape("leaves the pack");
        out.pop();
      }
      if (last) out.push("");
      continue;
    }
    out.push(part);
  }
  return out;
}

function resolveWithUrl(
  specifier: string,
  referrer: string,
): string[] | PackImportResolution {
  // The referrer is a literal file name: encode it so `%`, `?` or `#` in a
  // declared name stay part of the name.
  const base = referrer.slice(2).split("/").map(encodeURIComponent).join("/");
  let pathname: string | undefined;
  for (const root of ROOTS) {
    let url: URL;
    try {
      url = new URL(specifier, `cordon-pack://${root}${base}`);
    } catch {
      return escape("leaves the pack");
    }
    if (!url.pathname.startsWith(root)) return escape("leaves the pack");
    if (url.search !== "" || url.hash !== "") {
      return undeclared(
        "has a query or fragment (a file whose name holds # or ? is imported with %23 or %3F)",
      );
    }
    pathname ??= url.pathname.slice(root.length);
  }
  const segments: string[] = [];
  for (const encoded of pathname!.split("/")) {
    try {
      segments.push(decodeURIComponent(encoded));
    } catch {
      return undeclared("is not a valid percent-encoded path");
    }
  }
  return segments;
}

/**
 * Resolves a specifier imported by one pack module to another file of the
 * same pack, with the URL rules browsers use (`..`, `%2e%2e`, percent
 * decoding). Bare names, absolute paths, URLs, percent-encoded dots and
 * separators (`%2e`, `%2F`, `%5C`, as the import policy refuses them),
 * backslashes, control characters and anything that climbs out of the pack
 * are escapes; a file the pack does not declare, or a `?`
 * query or `#` fragment, is undeclared. A path without a `.js` or `.mjs`
 * extension names the first declared file of `<path>.js`, `<path>.mjs` and
 * `<path>/index.js`, as bundlers resolve it: discovery records that file in
 * the pack's graph, and the loader, given the same declared files, reaches
 * the same one.
 *
 * @param specifier The import specifier, such as `../lib/round.js`.
 * @param referrer The importing file, such as `./trig/sin.js`.
 * @param isDeclared Whether a normalised file (`./lib/round.js`) is one of
 * the pack's declared files.
 * @returns The declared file it names, or why not.
 *
 * @example
 * ```ts
 * import { resolvePackImport } from "@cordon/cordon/policy";
 * import assert from "node:assert/strict";
 *
 * const files = new Set(["./index.js", "./lib/round.js"]);
 * const has = (path: string) => files.has(path);
 * assert.deepEqual(
 *   resolvePackImport("./lib/%72ound.js", "./index.js", has),
 *   { ok: true, path: "./lib/round.js" },
 * );
 * const escaped = resolvePackImport("./%2e%2e/x.js", "./index.js", has);
 * assert.equal(escaped.ok === false && escaped.code, "PACK_IMPORT_ESCAPE");
 * ```
 */
export function resolvePackImport(
  specifier: string,
  referrer: string,
  isDeclared: (path: string) => boolean,
): PackImportResolution {
  if (!specifier.startsWith("./") && !specifier.startsWith("../")) {
    return escape(
      specifier.startsWith("/") || /^[A-Za-z][A-Za-z0-9+.-]*:/.test(specifier)
        ? "is an absolute path or URL"
        : BARE_SPECIFIER_REASON,
    );
  }
  if (CONTROL_OR_BACKSLASH.test(specifier) || specifier.endsWith(" ")) {
    return escape("contains a backslash or control character");
  }
  const resolved = PLAIN.test(specifier)
    ? resolvePlain(specifier, referrer)
    : resolveWithUrl(specifier, referrer);
  if (!Array.isArray(resolved)) return resolved;
  for (const segment of resolved) {
    if (ENCODED_SEPARATOR.test(segment)) {
      return escape("contains an encoded separator");
    }
    if (segment === "" || segment === "." || segment === "..") {
      return undeclared("names a folder or an empty path segment");
    }
  }
  // The import policy refuses these in any relative specifier, so a pack
  // that discovery accepts is one the loader also loads.
  if (hasEncodedPathChar(specifier)) {
    return escape("hides a dot, slash or backslash in percent-encoding");
  }
  const path = completePath(`./${resolved.join("/")}`, isDeclared);
  return path !== undefined
    ? { ok: true, path }
    : undeclared("names a file the manifest does not list");
}

const SCRIPT_EXTENSION = /\.m?js$/;

/**
 * The declared file a resolved path names: itself, or, as bundlers and
 * Node's ESM loaders for packages resolve, `<path>.js`, `<path>.mjs` or
 * `<path>/index.js`, in that order, when it has no script extension.
 */
function completePath(
  path: string,
  isDeclared: (path: string) => boolean,
): string | undefined {
  if (isDeclared(path)) return path;
  if (SCRIPT_EXTENSION.test(path)) return undefined;
  for (const candidate of [`${path}.js`, `${path}.mjs`, `${path}/index.js`]) {
    if (isDeclared(candidate)) return candidate;
  }
  return undefined;
}
