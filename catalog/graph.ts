// This module is browser compatible.

/**
 * Builds a pack's module graph: scans every declared file's static imports,
 * checks that each one stays inside the pack and names a declared file, and
 * computes per-file digests, module ids and graph digests.
 *
 * @module
 */

import {
  ERROR_CODES,
  type ErrorCode,
  type ModuleSummary,
  type PackManifest,
  type PackSummary,
} from "../protocol/mod.ts";
import { moduleIdFor, sha256Digest } from "./digest.ts";
import {
  initScanner,
  packScanFailure,
  scanModule,
} from "../policy/scan_module.ts";

/** One module in a graph digest: its file inside the pack and its digest. */
export interface GraphEntry {
  /** The file inside the pack, such as `./lib/round.js`. */
  path: string;
  /** SHA-256 of the file's bytes, `sha256-<base64>`. */
  digest: string;
}

/** A pack's module graph: its summary and the source of every module. */
export interface PackGraph {
  /** The pack's name, version, graph digest and modules. */
  summary: PackSummary;
  /** Every module's source text by file (`./lib/round.js`). */
  sources: Record<string, string>;
}

/** Why a pack's module graph was rejected. */
export interface PackGraphFailure {
  /** Always `false`. */
  ok: false;
  /** The stable error code, such as `PACK_IMPORT_ESCAPE`. */
  code: ErrorCode;
  /** What is wrong, naming the pack and file, and what to do. */
  message: string;
}

/** A built module graph, or why the pack was rejected. */
export type PackGraphResult = { ok: true; graph: PackGraph } | PackGraphFailure;

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
const BARE = "is a bare specifier, not a file of this pack";

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
      return undeclared("has a query or fragment");
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
 * decoding). Bare names, absolute paths, URLs, encoded separators
 * (`%2F`, `%5C`), backslashes, control characters and anything that climbs
 * out of the pack are escapes; a file the pack does not declare, or a `?`
 * query or `#` fragment, is undeclared.
 *
 * @param specifier The import specifier, such as `../lib/round.js`.
 * @param referrer The importing file, such as `./trig/sin.js`.
 * @param isDeclared Whether a normalised file (`./lib/round.js`) is one of
 * the pack's declared files.
 * @returns The declared file it names, or why not.
 *
 * @example
 * ```ts
 * import { resolvePackImport } from "@cordon/cordon/catalog";
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
        : BARE,
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
  const path = `./${resolved.join("/")}`;
  return isDeclared(path)
    ? { ok: true, path }
    : undeclared("names a file the manifest does not list");
}

/**
 * Computes a module's graph digest: SHA-256 over the canonical JSON
 * `[[path, digest], ...]` of the module itself followed by every other
 * module of its dependency closure sorted by path (UTF-16 code unit order).
 * A change in any module below changes it.
 *
 * @param self The module.
 * @param closure The other modules it reaches through static imports, in
 * any order; `self` and duplicates are ignored.
 * @returns The graph digest, `sha256-<base64>`.
 *
 * @example
 * ```ts
 * import { moduleGraphDigest } from "@cordon/cordon/catalog";
 * import assert from "node:assert/strict";
 *
 * const a = { path: "./a.js", digest: "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=" };
 * const b = { path: "./b.js", digest: "sha256-ypeBEsobvcr6wjGzmiPcTaeG7/gUfE5yuYB3ha/uSLs=" };
 * assert.notEqual(await moduleGraphDigest(a, [b]), await moduleGraphDigest(a, []));
 * ```
 */
export function moduleGraphDigest(
  self: GraphEntry,
  closure: Iterable<GraphEntry>,
): Promise<string> {
  const others = new Map<string, string>();
  for (const entry of closure) {
    if (entry.path !== self.path) others.set(entry.path, entry.digest);
  }
  const sorted = [...others].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return sha256Digest(JSON.stringify([[self.path, self.digest], ...sorted]));
}

/**
 * Computes a pack's graph digest: SHA-256 over the canonical JSON
 * `[[subpath, graphDigest], ...]` of its exported subpaths sorted by subpath
 * (UTF-16 code unit order).
 *
 * @param exports Exported subpath (`.`, `./trig`) to that module's graph
 * digest.
 * @returns The pack's graph digest, `sha256-<base64>`.
 *
 * @example
 * ```ts
 * import { packGraphDigest } from "@cordon/cordon/catalog";
 * import assert from "node:assert/strict";
 *
 * const g = "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=";
 * assert.equal(
 *   await packGraphDigest({ ".": g, "./trig": g }),
 *   await packGraphDigest({ "./trig": g, ".": g }),
 * );
 * ```
 */
export function packGraphDigest(
  exports: Readonly<Record<string, string>>,
): Promise<string> {
  const sorted = Object.entries(exports).sort(([a], [b]) =>
    a < b ? -1 : a > b ? 1 : 0
  );
  return sha256Digest(JSON.stringify(sorted));
}

function quote(specifier: string): string {
  const shown = specifier.length > 80
    ? `${specifier.slice(0, 80)}…`
    : specifier;
  return JSON.stringify(shown);
}

function remedy(code: ErrorCode): string {
  const text = ERROR_CODES[code].remedy;
  return text.charAt(0).toLowerCase() + text.slice(1);
}

function failure(
  code: ErrorCode,
  pack: string,
  detail: string,
): PackGraphFailure {
  return {
    ok: false,
    code,
    message: `Cannot use pack "${pack}": ${detail}; ${remedy(code)}`,
  };
}

function describeImport(
  file: string,
  specifier: string,
  resolution: PackImportResolution & { ok: false },
): string {
  // Specifiers that leave the pack are not echoed: they may spell out host
  // folders. Bare names and files inside the pack are safe to repeat.
  const echo = resolution.code === "PACK_IMPORT_UNDECLARED" ||
    resolution.reason === BARE;
  return echo
    ? `${file} imports ${quote(specifier)}, which ${resolution.reason}`
    : `${file} imports a specifier that ${resolution.reason}`;
}

function declaredFiles(manifest: PackManifest): string[] {
  const files = new Set<string>(Object.values(manifest.cordon.exports));
  for (const file of manifest.cordon.internal) files.add(file);
  return [...files];
}

function lookup(
  sources: Readonly<Record<string, string>> | ReadonlyMap<string, string>,
  file: string,
): string | undefined {
  if (sources instanceof Map) return sources.get(file);
  const record = sources as Readonly<Record<string, string>>;
  return Object.hasOwn(record, file) ? record[file] : undefined;
}

function closureOf(
  start: string,
  dependencies: ReadonlyMap<string, readonly string[]>,
): Set<string> {
  const seen = new Set<string>([start]);
  const stack = [start];
  while (stack.length > 0) {
    for (const next of dependencies.get(stack.pop()!) ?? []) {
      if (!seen.has(next)) {
        seen.add(next);
        stack.push(next);
      }
    }
  }
  return seen;
}

/**
 * Builds a pack's module graph from its validated manifest and the source of
 * each declared file. Every declared file (exported or internal) becomes a
 * module. A module is rejected, and with it the pack, when it uses
 * `import()` or `require`, imports with attributes, cannot be lexed, imports
 * a bare name, absolute path or URL, imports outside the pack, or imports a
 * file the manifest does not declare.
 *
 * @param manifest The pack's validated manifest (`PackManifestSchema`).
 * @param sources The source of every declared file, keyed by file
 * (`./index.js`); other keys are ignored.
 * @returns The pack's summary and sources, or why the pack was rejected.
 *
 * @example
 * ```ts
 * import { buildPackGraph } from "@cordon/cordon/catalog";
 * import { PackManifestSchema } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * const manifest = PackManifestSchema.parse({
 *   name: "math",
 *   version: "1.0.0",
 *   cordon: { exports: { ".": "./index.js" }, internal: ["./lib/round.js"] },
 * });
 * const result = await buildPackGraph(manifest, {
 *   "./index.js": 'export { round } from "./lib/round.js";',
 *   "./lib/round.js": "export const round = Math.round;",
 * });
 * assert.equal(result.ok, true);
 * if (result.ok) {
 *   const [index, round] = result.graph.summary.modules;
 *   assert.deepEqual(index?.dependencyIds, [round?.id]);
 *   assert.deepEqual(index?.exportedAs, ["."]);
 * }
 * ```
 */
export async function buildPackGraph(
  manifest: PackManifest,
  sources: Readonly<Record<string, string>> | ReadonlyMap<string, string>,
): Promise<PackGraphResult> {
  await initScanner();
  const { name, version } = manifest;
  const files = declaredFiles(manifest);
  const declared = new Set(files);
  const isDeclared = (path: string): boolean => declared.has(path);
  const texts = new Map<string, string>();
  const dependencies = new Map<string, string[]>();
  for (const file of files) {
    const source = lookup(sources, file);
    if (source === undefined) {
      return failure("PACK_FILE_MISSING", name, `${file} is missing`);
    }
    texts.set(file, source);
    const scan = scanModule(source, { mode: "pack" });
    const refused = packScanFailure(scan, source);
    if (refused !== null || !scan.readable) {
      return failure(refused!.code, name, `${file} ${refused!.detail}`);
    }
    const targets: string[] = [];
    for (const specifier of scan.specifiers) {
      const resolved = resolvePackImport(specifier, file, isDeclared);
      if (!resolved.ok) {
        return failure(
          resolved.code,
          name,
          describeImport(file, specifier, resolved),
        );
      }
      if (!targets.includes(resolved.path)) targets.push(resolved.path);
    }
    dependencies.set(file, targets);
  }

  const [digests, ids] = await Promise.all([
    Promise.all(files.map((file) => sha256Digest(texts.get(file)!))),
    Promise.all(files.map((file) => moduleIdFor(name, version, file))),
  ]);
  const digestOf = new Map(files.map((file, i) => [file, digests[i]!]));
  const idOf = new Map(files.map((file, i) => [file, ids[i]!]));
  const graphDigests = await Promise.all(files.map((file) =>
    moduleGraphDigest(
      { path: file, digest: digestOf.get(file)! },
      [...closureOf(file, dependencies)].map((path) => ({
        path,
        digest: digestOf.get(path)!,
      })),
    )
  ));
  const graphDigestOf = new Map(
    files.map((file, i) => [file, graphDigests[i]!]),
  );

  const exportedAs = new Map<string, string[]>();
  const exportDigests: Record<string, string> = {};
  for (const [subpath, file] of Object.entries(manifest.cordon.exports)) {
    exportedAs.set(file, [...(exportedAs.get(file) ?? []), subpath].sort());
    exportDigests[subpath] = graphDigestOf.get(file)!;
  }
  const modules: ModuleSummary[] = [...files].sort().map((file) => ({
    id: idOf.get(file)!,
    path: file,
    exportedAs: exportedAs.get(file) ?? [],
    digest: digestOf.get(file)!,
    graphDigest: graphDigestOf.get(file)!,
    dependencyIds: dependencies.get(file)!.map((path) => idOf.get(path)!),
  }));
  return {
    ok: true,
    graph: {
      summary: {
        name,
        version,
        graphDigest: await packGraphDigest(exportDigests),
        modules,
      },
      sources: Object.fromEntries(texts),
    },
  };
}
