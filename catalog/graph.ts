// This module is browser compatible.

/**
 * Builds a pack's module graph: scans every declared file's static imports,
 * checks that each one stays inside the pack and names a declared file, and
 * computes per-file digests, module ids and graph digests.
 *
 * @module
 */

import { operatorJson, operatorText } from "../protocol/operator_text.ts";
import {
  ERROR_CODES,
  type ErrorCode,
  type ModuleSummary,
  type PackManifest,
  type PackSummary,
} from "../protocol/mod.ts";
import { moduleIdFor, sha256Digest } from "./digest.ts";
import { packScanFailure } from "../policy/scan_module.ts";
import { scanPackSource } from "../policy/scan_pack.ts";
import {
  BARE_SPECIFIER_REASON,
  type PackImportResolution,
  resolvePackImport,
} from "../policy/pack_import.ts";
import { boundedClosures, MAX_CLOSURE_STEPS } from "./_closures.ts";

export { type PackImportResolution, resolvePackImport };

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
  return operatorJson(shown)!;
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
    resolution.reason === BARE_SPECIFIER_REASON;
  return echo
    ? `${operatorText(file)} imports ${
      quote(specifier)
    }, which ${resolution.reason}`
    : `${operatorText(file)} imports a specifier that ${resolution.reason}`;
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
  const { name, version } = manifest;
  const files = declaredFiles(manifest);
  const declared = new Set(files);
  const isDeclared = (path: string): boolean => declared.has(path);
  const texts = new Map<string, string>();
  const dependencies = new Map<string, string[]>();
  for (const file of files) {
    const source = lookup(sources, file);
    if (source === undefined) {
      return failure(
        "PACK_FILE_MISSING",
        name,
        `${operatorText(file)} is missing`,
      );
    }
    texts.set(file, source);
    const scan = await scanPackSource(source);
    const refused = packScanFailure(scan, source);
    if (refused !== null || !scan.readable) {
      return failure(
        refused!.code,
        name,
        `${operatorText(file)} ${refused!.detail}`,
      );
    }
    const targets = new Set<string>();
    for (const specifier of scan.specifiers) {
      const resolved = resolvePackImport(specifier, file, isDeclared);
      if (!resolved.ok) {
        return failure(
          resolved.code,
          name,
          describeImport(file, specifier, resolved),
        );
      }
      targets.add(resolved.path);
    }
    dependencies.set(file, [...targets]);
  }

  const [digests, ids] = await Promise.all([
    Promise.all(files.map((file) => sha256Digest(texts.get(file)!))),
    Promise.all(files.map((file) => moduleIdFor(name, version, file))),
  ]);
  const digestOf = new Map(files.map((file, i) => [file, digests[i]!]));
  const idOf = new Map(files.map((file, i) => [file, ids[i]!]));
  const closures = boundedClosures(files, (file) => dependencies.get(file)!);
  if (closures === undefined) {
    return failure(
      "PACK_GRAPH_TOO_LARGE",
      name,
      `its modules import each other through more than ${MAX_CLOSURE_STEPS} links`,
    );
  }
  const graphDigests = await Promise.all(
    files.map((file, i) =>
      moduleGraphDigest(
        { path: file, digest: digestOf.get(file)! },
        [...closures[i]!].map((path) => ({
          path,
          digest: digestOf.get(path)!,
        })),
      )
    ),
  );
  const graphDigestOf = new Map(
    files.map((file, i) => [file, graphDigests[i]!]),
  );

  const exportedAs = new Map<string, string[]>();
  const exportDigests: Record<string, string> = {};
  for (const [subpath, file] of Object.entries(manifest.cordon.exports)) {
    const subpaths = exportedAs.get(file);
    if (subpaths === undefined) exportedAs.set(file, [subpath]);
    else subpaths.push(subpath);
    exportDigests[subpath] = graphDigestOf.get(file)!;
  }
  // Sorted once here, not on each insert: a manifest may map tens of
  // thousands of subpaths to one file.
  for (const subpaths of exportedAs.values()) subpaths.sort();
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
