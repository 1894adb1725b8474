/**
 * The pack CLI: vets npm packages as packs. For each package it fetches the
 * version from the registry, checks the tarball against the registry's
 * integrity hash, bundles each public entry point into a self-contained ES
 * module (code shared by entry points goes into internal chunk modules),
 * checks every entry for what the sandbox refuses, loads it in the hardened
 * QuickJS realm (bundling alone an entry that throws at import in the build
 * it shares with the others, and falling back to the package's next build
 * of an entry that cannot work), and writes a pack folder whose manifest
 * records where it came from. A pack with an entry that cannot work is not
 * written unless `--force` is given; it then carries the report.
 *
 * ```sh
 * deno task pack date-fns@4 papaparse --out ./packs
 * deno task pack dayjs --subpaths .,./plugin/utc --out ./packs
 * ```
 *
 * Its exit code is 0 when every pack was written clean, 1 when one was
 * refused or failed, and 2 for bad flags.
 *
 * @module
 */

import { createDiskCatalog } from "../catalog/disk_catalog.ts";
import { createQuickJSLoader } from "../loader/quickjs_loader.ts";
import { isNodeCompatSpecifier } from "../policy/import_specifier.ts";
import { CordonError } from "../protocol/cordon_error.ts";
import { operatorText } from "../protocol/operator_text.ts";
import type {
  ErrorCode,
  NpmOrigin,
  PackManifestInput,
} from "../protocol/mod.ts";
import {
  MAX_TIMER_MS,
  readIntegerOption,
  readOptions,
  TIMEOUT_MS_RANGE,
} from "../protocol/options.ts";
import {
  enterTaskStartDir,
  type FlagSpec,
  isOsError,
  messageOf,
  parseOrAnswer,
  pathErrorLine,
  readFlags,
  readIntegerFlag,
} from "./_flags.ts";
import {
  exportNames,
  isCommonJsEntry,
  withNamedExports,
} from "./_cjs_exports.ts";
import {
  manifestForBundler,
  reachableBuiltinNames,
} from "./_builtin_named_dependencies.ts";
import { emptyBuild, joinBuilds } from "./_alone_builds.ts";
import { bundleEntries, type BundleOutput } from "./_npm_bundle.ts";
import {
  chooseEntries,
  type EntryPoint,
  type EntrySelection,
} from "./_npm_entries.ts";
import {
  DEFAULT_FETCH_TIMEOUT_MS,
  DEFAULT_REGISTRY,
  fetchPackageTree,
  type PackageTree,
  parseNpmSpec,
  uninstalledPeers,
} from "./_npm_fetch.ts";
import {
  checkBundle,
  type EntryCheck,
  LEFT_OUT_PACKAGE,
} from "./_pack_checks.ts";

export type { EntryCheck } from "./_pack_checks.ts";

/** Options of {@linkcode packNpm}. */
export interface PackNpmOptions {
  /** The packs folder the pack is written into, as `<outDir>/<name>/`. */
  outDir: string;
  /**
   * The subpaths to bundle, such as `[".", "./plugin/utc"]`.
   *
   * @default {every subpath the package exports}
   */
  subpaths?: readonly string[];
  /**
   * The npm registry's base URL.
   *
   * @default {"https://registry.npmjs.org"}
   */
  registry?: string;
  /**
   * Write the pack even when an entry cannot work; it then carries the
   * report in `cordon.npm.report`.
   *
   * @default {false}
   */
  force?: boolean;
  /**
   * How long one registry request (metadata or tarball) may take, from
   * sending it to the last byte of its body, in milliseconds. A request
   * still unfinished then is abandoned and fails with `NPM_FETCH_FAILED`.
   * Each request has its own deadline.
   *
   * @default {60000}
   */
  fetchTimeoutMs?: number;
  /**
   * Aborts the downloads; `packNpm()` then rejects with the signal's
   * reason.
   */
  signal?: AbortSignal;
}

/** Why the first subpaths were skipped, for a refusal's message. */
function skippedText(skipped: EntrySelection["skipped"]): string {
  if (skipped.length === 0) return "";
  const shown = skipped.slice(0, 3).map(({ subpath, reason }) =>
    `${subpath} ${reason}`
  );
  if (skipped.length > 3) shown.push(`${skipped.length - 3} more`);
  return ` (${shown.join("; ")})`;
}

/** What {@linkcode packNpm} did with one package. */
export interface PackReport {
  /** The npm name. */
  name: string;
  /** The version fetched. */
  version: string;
  /** The licence its `package.json` states. */
  license: string;
  /** The registry's integrity hash the tarball matched. */
  integrity: string;
  /** One check per entry point, in subpath order. */
  entries: EntryCheck[];
  /** Exported subpaths that are not entries of the pack, and why. */
  skipped: { subpath: string; reason: string }[];
  /** How many modules the pack has, entries and chunks. */
  modules: number;
  /** The size of its modules, in bytes. */
  bytes: number;
  /** Whether the pack folder was written. */
  written: boolean;
}

const LICENSE_FILE = /^licen[cs]e(?:\.(?:md|txt))?$/i;
const utf8 = new TextDecoder("utf-8", { fatal: true });

function licenseOf(manifest: Record<string, unknown>): string {
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

async function writeFiles(
  root: string,
  files: Iterable<[string, Uint8Array]>,
): Promise<void> {
  await Deno.mkdir(root, { recursive: true });
  for (const [path, bytes] of files) {
    const slash = path.lastIndexOf("/");
    if (slash !== -1) {
      await Deno.mkdir(`${root}/${path.slice(0, slash)}`, { recursive: true });
    }
    await Deno.writeFile(`${root}/${path}`, bytes);
  }
}

async function layOut(work: string, tree: PackageTree): Promise<void> {
  await Deno.writeTextFile(`${work}/package.json`, '{"private":true}\n');
  for (const [dir, pkg] of tree.placed) {
    try {
      const manifest = manifestForBundler(
        pkg.manifest,
        reachableBuiltinNames(dir, tree.placed.keys()),
      );
      await writeFiles(
        `${work}/${dir}`,
        pkg.files.map((file) => [
          file.path,
          file.path === "package.json" && manifest !== null
            ? new TextEncoder().encode(manifest)
            : file.bytes,
        ]),
      );
    } catch (error) {
      // The file system's message names the work folder: say what failed,
      // and keep the error (and its path) out of the cause.
      throw new CordonError(
        "NPM_PACKAGE_INVALID",
        `Cannot unpack ${pkg.name}@${pkg.version}: its files cannot be written to disk (${
          (error as { code?: string }).code ?? (error as Error).name
        }); check the package's file names`,
      );
    }
  }
}

/**
 * The tree's dependencies whose files the pack's modules hold, read from
 * the comment the bundler writes before each file it inlines
 * (`// node_modules/a/node_modules/b/x.js`, which is b's, the deepest
 * package folder holding it): a types-only package, or one that only a
 * left-out entry imports, is not in the pack.
 */
function bundledRefs(
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
  for (const [dir, pkg] of tree.placed) {
    if (pkg === tree.root || !inlined.has(dir)) continue;
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

/** Why an entry failed the load check. */
interface LoadFailure {
  /** The problem, for the report. */
  problem: string;
  /** Whether it threw at import for a reason a build of its own may lack. */
  mayWorkAlone: boolean;
}

/** Imports every entry in the hardened realm; returns why each one failed. */
async function loadCheck(
  packsDir: string,
  name: string,
  subpaths: readonly string[],
): Promise<Map<string, LoadFailure>> {
  const failures = new Map<string, LoadFailure>();
  const catalog = await createDiskCatalog(packsDir);
  for (const diagnostic of catalog.diagnostics()) {
    for (const subpath of subpaths) {
      failures.set(subpath, {
        problem: `pack discovery refuses it: ${diagnostic.message}`,
        mayWorkAlone: false,
      });
    }
  }
  if (failures.size > 0 || subpaths.length === 0) return failures;
  using loader = await createQuickJSLoader({ catalog });
  const specifier = (subpath: string) =>
    JSON.stringify(subpath === "." ? name : `${name}${subpath.slice(1)}`);
  const importAll = async (batch: readonly string[]) => {
    const source =
      batch.map((subpath, i) =>
        `import * as m${i} from ${specifier(subpath)};\n`
      ).join("") + "export default true;\n";
    return await loader.run({ source, packages: [name] }, {
      timeoutMs: 60_000,
      memoryLimitBytes: 512 * 1024 * 1024,
    });
  };
  if ((await importAll(subpaths)).ok) return failures;
  for (const subpath of subpaths) {
    const result = await importAll([subpath]);
    if (!result.ok) {
      failures.set(subpath, {
        problem: explainLoadFailure(result.error),
        mayWorkAlone: mayWorkAlone(result.error),
      });
    }
  }
  return failures;
}

/**
 * The own enumerable property names of each entry's default export, read
 * in the hardened realm: for entries made from CommonJS modules, whose
 * `module.exports` it is.
 */
async function defaultExportKeys(
  packsDir: string,
  name: string,
  subpaths: readonly string[],
): Promise<Map<string, unknown[]>> {
  const keys = new Map<string, unknown[]>();
  if (subpaths.length === 0) return keys;
  using loader = await createQuickJSLoader({
    catalog: await createDiskCatalog(packsDir),
  });
  const source =
    subpaths.map((subpath, i) =>
      `import m${i} from ${
        JSON.stringify(subpath === "." ? name : `${name}${subpath.slice(1)}`)
      };\n`
    ).join("") +
    `export default [${
      subpaths.map((_, i) =>
        `Object(m${i}) === m${i} ? Object.keys(m${i}) : []`
      )
        .join(", ")
    }];\n`;
  const result = await loader.run({ source, packages: [name] }, {
    timeoutMs: 60_000,
    memoryLimitBytes: 512 * 1024 * 1024,
  });
  if (result.ok && Array.isArray(result.value)) {
    for (const [i, subpath] of subpaths.entries()) {
      const value = result.value[i];
      keys.set(subpath, Array.isArray(value) ? value : []);
    }
  }
  return keys;
}

// QuickJS's words for writing to a frozen object, and the sandbox's own.
const FROZEN =
  /not extensible|read-only|read only|non-writable|cannot define property|could not delete property|not configurable|intrinsics are frozen/i;

// QuickJS's words for a global that does not exist, and the bundler's for
// a `require` call at import.
const UNDEFINED_GLOBAL = /^'([\w$]+)' is not defined$/;
const BUNDLER_REQUIRE = /^Dynamic require of "([^"]+)" is not supported$/;
/** QuickJS's own check of the bytecode it compiled, which some code fails. */
const ENGINE_STACK = /^stack (?:underflow|overflow) \(op=\d+, pc=\d+\)$/;

const NODE_GLOBALS: ReadonlySet<string> = new Set([
  "Buffer",
  "process",
  "global",
  "require",
  "module",
  "exports",
  "__dirname",
  "__filename",
]);
// Language built-ins Deno has and QuickJS realms lack on purpose (see
// docs/loader.md, "Language built-ins").
const LEFT_OUT: ReadonlySet<string> = new Set([
  "Intl",
  "Temporal",
  "Atomics",
  "WebAssembly",
]);
const TIMERS: ReadonlySet<string> = new Set([
  "setTimeout",
  "setInterval",
  "setImmediate",
  "clearTimeout",
  "clearInterval",
  "clearImmediate",
]);

/** What the sandbox lacks, for a load failure that names it. */
function lacking(message: string): string {
  if (FROZEN.test(message)) {
    return ": the sandbox freezes every built-in and keeps the realm's globals read-only, so a module cannot patch a built-in or replace a global (it may add globals of its own)";
  }
  const required = BUNDLER_REQUIRE.exec(message)?.[1];
  if (required !== undefined) {
    const call = `: it calls require(${
      JSON.stringify(required)
    }) when imported`;
    return isNodeCompatSpecifier(required) || required.startsWith("node:")
      ? `${call}, and the sandbox has no require or Node built-ins; use a build of the package for browsers`
      : `${call}, ${LEFT_OUT_PACKAGE}`;
  }
  if (ENGINE_STACK.test(message)) {
    return ": QuickJS cannot compile a function of the module, a limit of the engine, not of the sandbox (`for (x of yield y)` in a generator is one cause); use another build of the package, or another package";
  }
  if (message === "not a function") {
    return ": if it is a built-in, note that QuickJS lacks JSON.rawJSON, JSON.isRawJSON, Date.prototype.toTemporalInstant and RegExp's legacy statics (RegExp.$1 and the like), which the sandbox leaves out";
  }
  const name = UNDEFINED_GLOBAL.exec(message)?.[1];
  if (name === undefined) return "";
  if (NODE_GLOBALS.has(name)) {
    return `: ${name} is a Node global, which the sandbox lacks; use a build of the package for browsers, or a package that does not need Node`;
  }
  if (LEFT_OUT.has(name)) {
    return `: the sandbox has no global ${name}: QuickJS lacks it, and it is left out because it cannot be pure computation here (Intl, Temporal, Atomics without shared memory, WebAssembly); use a package that does not need it`;
  }
  if (TIMERS.has(name)) {
    return `: the sandbox has no timers (${name}); a run is one synchronous evaluation and its promise jobs`;
  }
  return `: the sandbox has no global ${name} (QuickJS has only the Web APIs that are pure computation: TextEncoder, TextDecoder, atob, btoa, URL, URLSearchParams, Blob and File without stream(), structuredClone, crypto.getRandomValues, crypto.randomUUID, queueMicrotask, DOMException, Event, CustomEvent, EventTarget, AbortController, AbortSignal without timeout())`;
}

// The realm's words for eval and the Function constructors.
const CODE_GENERATION = /code generation from strings is denied/;

/** What the sandbox withholds, by the words of a throw at import. */
const WITHHELD: readonly RegExp[] = [
  FROZEN,
  BUNDLER_REQUIRE,
  ENGINE_STACK,
  UNDEFINED_GLOBAL,
  CODE_GENERATION,
];

/**
 * Whether an entry that threw at import may work bundled alone. The
 * bundler can run the modules entries share in another order than the
 * package imports them (evanw/esbuild#399), which a build of the entry
 * alone does not do; but a build of its own changes nothing the sandbox
 * withholds (a global, code generation, a built-in to patch, require) or
 * QuickJS cannot compile, and a denied import is no throw.
 */
function mayWorkAlone(error: { code: string; message: string }): boolean {
  if (error.code !== "GUEST_ERROR") return false;
  return !WITHHELD.some((withheld) => withheld.test(error.message));
}

// The loader's advice for a pack module QuickJS cannot parse, which fits
// an installed pack, not one being made.
const REINSTALL = /; reinstall a vetted version of the pack$/;

function explainLoadFailure(error: { code: string; message: string }): string {
  if (error.code === "PACK_MODULE_SYNTAX") {
    // The bundler parsed and wrote this module, so QuickJS's parser is
    // what refuses it.
    const message = error.message.replace(REINSTALL, "").slice(0, 300);
    return `importing it in the sandbox fails with ${error.code} (${message}): QuickJS cannot parse a module the bundler wrote, a limit of the engine, not of the sandbox (it refuses a \`-\` outside a class in a regular expression with the \`v\` flag); use another build of the package, or another package`;
  }
  const message = error.message.slice(0, 300);
  return `importing it in the sandbox fails with ${error.code} (${message})${
    lacking(message)
  }`;
}

/**
 * Refuses a package named like a Node built-in (`punycode`, `buffer`,
 * `events`) before anything is fetched: import-policy rule 2 denies that
 * name in every sandbox, so its pack could never be imported.
 */
function refuseBuiltinName(name: string): void {
  if (!isNodeCompatSpecifier(name)) return;
  throw new CordonError(
    "NPM_NOT_BUNDLABLE",
    `Cannot pack ${name}: its name is a Node built-in's, which the import policy denies in every sandbox; pack a copy published under another name (punycode's is punycode.js)`,
  );
}

async function replaceFolder(outDir: string, name: string, from: string) {
  const target = `${outDir}/${name}`;
  await Deno.remove(target, { recursive: true }).catch((error) => {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  });
  await Deno.rename(from, target);
}

/**
 * Fetches one npm package, bundles and checks it, and writes it as a pack
 * into `options.outDir` unless an entry cannot work (or `force` is set).
 * The same package version always gives the same bytes.
 *
 * Every failure of the package is a {@linkcode CordonError} with a
 * one-line message and one of these codes:
 *
 * - `NPM_FETCH_FAILED`: the registry or a tarball cannot be fetched (the
 *   network, an HTTP error, over 64 MiB, not in full within
 *   `fetchTimeoutMs`, a tarball URL that is not http(s)).
 * - `NPM_NOT_FOUND`: the registry has no such package, or no version in
 *   the range or tag.
 * - `NPM_INTEGRITY_MISMATCH`: a tarball does not match the registry's hash.
 * - `NPM_PACKAGE_INVALID`: metadata, `package.json` or an archive is
 *   malformed or unsafe.
 * - `NPM_NOT_BUNDLABLE`: no entry point, a subpath the package does not
 *   export, a dependency from outside the registry, or the bundler failed
 *   on every entry.
 *
 * An entry that cannot work in the sandbox is no failure: the report
 * lists it.
 *
 * @param spec An npm spec: `date-fns`, `date-fns@4`, `@scope/name@^1.2`.
 * @param options Where to write, which subpaths, the registry, the time
 * bound of each request.
 * @returns What was checked and whether the pack was written.
 * @throws {TypeError} When the spec is not an npm name, or
 * `fetchTimeoutMs` is not a number.
 * @throws {RangeError} When `fetchTimeoutMs` is not an integer from 1 to
 * 2147483647.
 * @throws {CordonError} With one of the codes above and a one-line message
 * when the package cannot be fetched, does not match its integrity hash,
 * is malformed or cannot be bundled; or the signal's reason when
 * `options.signal` aborts. Writing to `outDir` may throw the file system's
 * error.
 *
 * @example
 * ```ts ignore
 * import { packNpm } from "@cordon/cordon/cli/pack";
 *
 * const report = await packNpm("date-fns@4", { outDir: "./packs" });
 * console.log(report.written, report.entries.length);
 * ```
 */
export async function packNpm(
  spec: string,
  given: PackNpmOptions,
): Promise<PackReport> {
  const options = readOptions("pack an npm package", given ?? null, {
    outDir: true,
    subpaths: true,
    registry: true,
    force: true,
    fetchTimeoutMs: true,
    signal: true,
  });
  const parsed = parseNpmSpec(spec);
  refuseBuiltinName(parsed.name);
  const fetchTimeoutMs = readIntegerOption(
    "pack an npm package",
    "fetchTimeoutMs",
    options.fetchTimeoutMs,
    DEFAULT_FETCH_TIMEOUT_MS,
    TIMEOUT_MS_RANGE,
  );
  const tree = await fetchPackageTree(parsed, {
    registry: options.registry ?? DEFAULT_REGISTRY,
    fetchTimeoutMs,
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  });
  const { root } = tree;
  const what = `${root.name}@${root.version}`;
  const work = await Deno.makeTempDir({ prefix: "cordon-pack-" });
  try {
    await layOut(work, tree);
    const paths = new Set(root.files.map((file) => file.path));
    let selection: EntrySelection;
    try {
      const byPath = new Map(root.files.map((file) => [file.path, file]));
      selection = chooseEntries(
        root.manifest,
        (path) => paths.has(path),
        options.subpaths,
        (path) => {
          const file = byPath.get(path);
          return file === undefined
            ? undefined
            : new TextDecoder().decode(file.bytes);
        },
      );
    } catch (error) {
      throw new CordonError(
        "NPM_NOT_BUNDLABLE",
        `Cannot pack ${what}: ${(error as Error).message}`,
        { cause: error },
      );
    }
    if (selection.entries.length === 0) {
      throw new CordonError(
        "NPM_NOT_BUNDLABLE",
        `Cannot pack ${what}: it has no JavaScript entry point a pack can export${
          skippedText(selection.skipped)
        }; ${
          options.subpaths === undefined
            ? "name one with --subpaths"
            : "name another subpath with --subpaths, or pack another version"
        }`,
      );
    }
    const license = licenseOf(root.manifest);
    const origin: NpmOrigin = {
      name: root.name,
      version: root.version,
      integrity: root.integrity,
      license,
      bundled: [],
    };
    const licenseFile = root.files
      .filter((file) => LICENSE_FILE.test(file.path))
      .sort((a, b) => (a.path < b.path ? -1 : 1))[0];
    const aloneBuilds = new Map<string, BundleOutput>();
    const build = (
      entries: readonly EntryPoint[],
      report?: NpmOrigin["report"],
    ) =>
      buildPack(work, {
        tree,
        entries,
        origin,
        licenseBytes: licenseFile?.bytes,
        report,
        aloneBuilds,
      });
    const outcome = await settle(
      build,
      selection.entries,
      options.force === true,
    );
    const report: PackReport = {
      name: root.name,
      version: root.version,
      license,
      integrity: root.integrity,
      entries: outcome.checks,
      skipped: selection.skipped,
      modules: outcome.pack?.modules ?? 0,
      bytes: outcome.pack?.bytes ?? 0,
      written: false,
    };
    if (outcome.pack === undefined) return report;
    await writePackFolder(options.outDir, root.name, outcome.pack.files);
    report.written = true;
    return report;
  } finally {
    await Deno.remove(work, { recursive: true });
  }
}

/** A pack folder built and checked in the work folder. */
interface BuiltPack {
  /** Its files, the manifest last, by path inside the pack folder. */
  files: [string, Uint8Array][];
  modules: number;
  bytes: number;
  checks: EntryCheck[];
  /**
   * The entries that threw at import in the build they shared with other
   * entries, for a reason a build of their own may lack.
   */
  retryAlone: ReadonlySet<string>;
}

/** What one build of a pack is made of. */
interface PackPlan {
  tree: PackageTree;
  entries: readonly EntryPoint[];
  origin: NpmOrigin;
  /** The package's licence file, copied as `LICENSE`. */
  licenseBytes: Uint8Array | undefined;
  /** The entries left out, for the manifest. */
  report: NpmOrigin["report"];
  /**
   * The builds of entries bundled alone, by subpath and file, kept across
   * the rounds of {@linkcode settle} so each is bundled once.
   */
  aloneBuilds: Map<string, BundleOutput>;
}

/** Bundles some entries of the package in one bundler run. */
type Bundler = (entries: readonly EntryPoint[]) => Promise<BundleOutput>;

/**
 * Bundles the entries together, and each entry marked `alone` by itself
 * (once: `aloneBuilds` keeps its build for the next rounds), and joins
 * the builds into one pack.
 */
async function bundleWhatBuilds(
  work: string,
  plan: PackPlan,
): Promise<{ bundle: BundleOutput; unbundled: EntryCheck[] }> {
  const { tree, entries, aloneBuilds } = plan;
  const external = uninstalledPeers(tree);
  const bundle: Bundler = (some) =>
    bundleEntries(work, tree.rootDir, some, external);
  const together = entries.filter((entry) => entry.alone !== true);
  const { bundle: shared, unbundled } = together.length === 0
    ? { bundle: emptyBuild(), unbundled: [] }
    : await bundleTogether(bundle, together);
  const alone = new Map<string, BundleOutput>();
  let failure: unknown;
  for (const entry of entries) {
    if (entry.alone !== true) continue;
    const key = JSON.stringify([entry.subpath, entry.file]);
    try {
      const build = aloneBuilds.get(key) ?? await bundle([entry]);
      aloneBuilds.set(key, build);
      alone.set(entry.subpath, build);
    } catch (error) {
      failure ??= error;
      unbundled.push(unbundledCheck(entry, error));
    }
  }
  const joined = joinBuilds(
    shared,
    alone,
    entries.map((entry) => entry.subpath),
  );
  if (joined.entryFiles.size === 0) throw failure;
  return { bundle: joined, unbundled };
}

/**
 * Bundles the entries together. When that fails and there are several,
 * bundles each alone, so an entry the bundler cannot build (txml's
 * `./transform-stream` imports a file the package lacks) is left out with
 * the bundler's error instead of failing the whole package. Throws the
 * first error when no entry, or every entry, builds alone.
 */
async function bundleTogether(
  bundle: Bundler,
  entries: readonly EntryPoint[],
): Promise<{ bundle: BundleOutput; unbundled: EntryCheck[] }> {
  try {
    return { bundle: await bundle(entries), unbundled: [] };
  } catch (error) {
    if (entries.length < 2) throw error;
    const builds: EntryPoint[] = [];
    const unbundled: EntryCheck[] = [];
    for (const entry of entries) {
      try {
        await bundle([entry]);
        builds.push(entry);
      } catch (alone) {
        unbundled.push(unbundledCheck(entry, alone));
      }
    }
    if (builds.length === 0 || unbundled.length === 0) throw error;
    return { bundle: await bundle(builds), unbundled };
  }
}

/** The check of an entry the bundler cannot build. */
function unbundledCheck(entry: EntryPoint, error: unknown): EntryCheck {
  return {
    subpath: entry.subpath,
    problems: [
      `the bundler cannot build it: ${
        (error as Error).message
      }; pack another build or leave it out`,
    ],
    warnings: [],
  };
}

/** Bundles entries, checks them, and loads the clean ones in the sandbox. */
async function buildPack(work: string, plan: PackPlan): Promise<BuiltPack> {
  const { tree, entries, origin, licenseBytes, report } = plan;
  const { root } = tree;
  const what = `${root.name}@${root.version}`;
  let bundle: BundleOutput;
  let unbundled: EntryCheck[];
  try {
    ({ bundle, unbundled } = await bundleWhatBuilds(work, plan));
  } catch (error) {
    throw new CordonError(
      "NPM_NOT_BUNDLABLE",
      `Cannot bundle ${what}: ${(error as Error).message}`,
      { cause: error },
    );
  }
  const sources = new Map<string, string>();
  for (const [path, bytes] of bundle.files) {
    if (!path.endsWith(".js")) {
      throw new CordonError(
        "NPM_NOT_BUNDLABLE",
        `Cannot pack ${what}: the bundle has a file that is not JavaScript (${path}), which a pack cannot hold; pack a build of the package that is JavaScript only`,
      );
    }
    sources.set(path, utf8.decode(bytes));
  }
  const checks = [
    ...await checkBundle(sources, bundle.entryFiles),
    ...unbundled,
  ];
  for (const check of checks) {
    const entry = entries.find((candidate) =>
      candidate.subpath === check.subpath
    );
    check.warnings.unshift(...entry?.notes ?? []);
  }
  const entryPaths = new Set(bundle.entryFiles.values());
  const cordon: PackManifestInput["cordon"] = {
    exports: Object.fromEntries(
      [...bundle.entryFiles].map(([subpath, file]) => [subpath, `./${file}`]),
    ),
    internal: [...bundle.files.keys()]
      .filter((path) => !entryPaths.has(path))
      .map((path) => `./${path}`),
    npm: {
      ...origin,
      bundled: bundledRefs(tree, sources),
      ...(report === undefined ? {} : { report }),
    },
  };
  const manifest = {
    name: root.name,
    version: root.version,
    license: origin.license,
    cordon,
  };
  const extras: [string, Uint8Array][] = [];
  if (licenseBytes !== undefined) extras.push(["LICENSE", licenseBytes]);
  extras.push([
    "package.json",
    new TextEncoder().encode(JSON.stringify(manifest, null, 2) + "\n"),
  ]);
  const packFiles = (): [string, Uint8Array][] => [...bundle.files, ...extras];
  const stage = `${work}/packs`;
  await Deno.remove(stage, { recursive: true }).catch(() => {});
  await writeFiles(`${stage}/${root.name}`, packFiles());
  // Discovery refuses a whole pack for one bad module, so the sandbox is
  // tried only once every entry passed the static checks.
  const loadable = checks.every((check) => check.problems.length === 0)
    ? checks.map((check) => check.subpath)
    : [];
  let failures = await loadCheck(stage, root.name, loadable);
  if (failures.size === 0 && loadable.length > 0) {
    // A CommonJS entry offers its `module.exports` properties as named
    // exports, as in Node and Deno; the rewritten pack is checked again.
    // If reading them fails at import (a getter that throws), the pack
    // goes back to the default export alone.
    const named = await namedCommonJsEntries(stage, root.name, bundle);
    if (named.size > 0) {
      const original = new Map(
        [...named.keys()].map((path) => [path, bundle.files.get(path)!]),
      );
      const restage = async (
        modules: ReadonlyMap<string, Uint8Array<ArrayBuffer>>,
      ) => {
        for (const [path, bytes] of modules) bundle.files.set(path, bytes);
        await writeFiles(`${stage}/${root.name}`, packFiles());
        return await loadCheck(stage, root.name, loadable);
      };
      failures = await restage(
        new Map(
          [...named].map((
            [path, text],
          ) => [path, new TextEncoder().encode(text)]),
        ),
      );
      if (failures.size > 0) failures = await restage(original);
    }
  }
  for (const check of checks) {
    const failure = failures.get(check.subpath);
    if (failure !== undefined) check.problems.push(failure.problem);
  }
  let bytes = 0;
  for (const file of bundle.files.values()) bytes += file.byteLength;
  return {
    files: packFiles(),
    modules: bundle.files.size,
    bytes,
    checks,
    retryAlone: sharedFailures(entries, failures),
  };
}

/**
 * The entries that threw at import in a build shared with other entries
 * for a reason a build of their own may lack; an entry that had the
 * build to itself has nothing to gain.
 */
function sharedFailures(
  entries: readonly EntryPoint[],
  failures: ReadonlyMap<string, LoadFailure>,
): Set<string> {
  const together = entries.filter((entry) => entry.alone !== true);
  if (together.length < 2) return new Set();
  return new Set(
    together.filter((entry) => failures.get(entry.subpath)?.mayWorkAlone)
      .map((entry) => entry.subpath),
  );
}

/** The CommonJS entries that get named exports: module path to new text. */
async function namedCommonJsEntries(
  stage: string,
  name: string,
  bundle: BundleOutput,
): Promise<Map<string, string>> {
  const texts = new Map<string, string>();
  const common = [...bundle.entryFiles].filter(([, path]) => {
    const text = utf8.decode(bundle.files.get(path)!);
    if (!isCommonJsEntry(text)) return false;
    texts.set(path, text);
    return true;
  });
  const keys = await defaultExportKeys(
    stage,
    name,
    common.map(([subpath]) => subpath),
  );
  const named = new Map<string, string>();
  for (const [subpath, path] of common) {
    const names = exportNames(keys.get(subpath) ?? []);
    named.set(path, withNamedExports(texts.get(path)!, names));
  }
  return named;
}

/** The pack to write (if any) and every entry's check. */
interface Settled {
  pack: BuiltPack | undefined;
  checks: EntryCheck[];
}

const MAX_ROUNDS = 6;

/**
 * The entry with its next build in place of one that cannot work, or
 * `undefined` when it has none the bundle can hold beside `others` (the
 * bundler names a module after its file, so two files with one stem
 * cannot both be entries).
 */
function nextBuild(
  entry: EntryPoint,
  check: EntryCheck,
  others: readonly EntryPoint[],
): EntryPoint | undefined {
  const stem = (file: string) => file.replace(/\.[cm]?js$/, "");
  const at = entry.alternatives.findIndex((file) =>
    !others.some((other) =>
      other.file !== file && stem(other.file) === stem(file)
    )
  );
  if (at === -1) return undefined;
  const file = entry.alternatives[at]!;
  return {
    subpath: entry.subpath,
    file,
    alternatives: entry.alternatives.slice(at + 1),
    notes: [
      ...entry.notes,
      `./${entry.file} cannot work in the sandbox, so the package's next build, ./${file}, was tried in its place: ${
        check.problems.join("; ")
      }`,
    ],
  };
}

/**
 * The entry to bundle by itself, with a note saying why, after it threw
 * at import in the build it shared with the other entries.
 */
function bundledAlone(entry: EntryPoint, check: EntryCheck): EntryPoint {
  return {
    ...entry,
    alone: true,
    notes: [
      ...entry.notes,
      `bundled alone, as in the build it shares with the other entries ${
        check.problems.join("; ")
      }: the bundler can run the modules entries share in another order than the package imports them (evanw/esbuild#399); its module instances are not shared with the pack's other entries`,
    ],
  };
}

/**
 * Bundles alone each entry that threw at import in the build it shared
 * with the other entries (see {@linkcode mayWorkAlone}), puts the
 * package's next build in place of each other entry that cannot work and
 * has one, leaves out the others and builds again, until every entry
 * left works; with `force`, writes every entry and the report instead of
 * leaving any out.
 */
async function settle(
  build: (
    entries: readonly EntryPoint[],
    report?: NpmOrigin["report"],
  ) => Promise<BuiltPack>,
  all: readonly EntryPoint[],
  force: boolean,
): Promise<Settled> {
  const refused: EntryCheck[] = [];
  let entries = all;
  for (let round = 0; round < MAX_ROUNDS && entries.length > 0; round++) {
    const pack = await build(entries, reportOf(refused));
    const bad = new Map(
      pack.checks.filter((check) => check.problems.length > 0)
        .map((check) => [check.subpath, check]),
    );
    if (bad.size === 0) {
      return { pack, checks: sortChecks([...refused, ...pack.checks]) };
    }
    let swapped = false;
    const kept: EntryPoint[] = [];
    const stuck: EntryCheck[] = [];
    for (const entry of entries) {
      const check = bad.get(entry.subpath);
      if (check === undefined) {
        kept.push(entry);
        continue;
      }
      const next = pack.retryAlone.has(entry.subpath)
        ? bundledAlone(entry, check)
        : nextBuild(entry, check, entries.filter((other) => other !== entry));
      if (next !== undefined) {
        kept.push(next);
        swapped = true;
      } else {
        stuck.push(check);
        if (force) kept.push(entry);
      }
    }
    if (force && !swapped) {
      const forced = await build(entries, reportOf([...bad.values()]));
      return { pack: forced, checks: forced.checks };
    }
    if (!force) refused.push(...stuck);
    entries = kept;
  }
  return { pack: undefined, checks: sortChecks(refused) };
}

function reportOf(checks: readonly EntryCheck[]): NpmOrigin["report"] {
  if (checks.length === 0) return undefined;
  return sortChecks(checks).map((check) => ({
    subpath: check.subpath,
    problems: check.problems,
  }));
}

function sortChecks<T extends { subpath: string }>(checks: readonly T[]): T[] {
  return [...checks].sort((a, b) =>
    a.subpath < b.subpath ? -1 : a.subpath > b.subpath ? 1 : 0
  );
}

/** Writes the pack into a hidden folder first, then swaps it in. */
async function writePackFolder(
  outDir: string,
  name: string,
  files: Iterable<[string, Uint8Array]>,
): Promise<void> {
  await Deno.mkdir(outDir, { recursive: true });
  const temp = await Deno.makeTempDir({ dir: outDir, prefix: ".pack-" });
  try {
    await writeFiles(temp, files);
    if (name.includes("/")) {
      await Deno.mkdir(`${outDir}/${name.split("/")[0]}`, { recursive: true });
    }
    await replaceFolder(outDir, name, temp);
  } finally {
    await Deno.remove(temp, { recursive: true }).catch(() => {});
  }
}

/** The flags of the pack CLI, parsed. */
export interface PackArgs {
  /** The npm specs to pack. */
  specs: string[];
  /** `--out DIR`: the packs folder. */
  outDir: string;
  /** `--subpaths .,./sub`: the subpaths to bundle (one package only). */
  subpaths?: string[];
  /** `--registry URL`: the npm registry. */
  registry?: string;
  /** `--fetch-timeout-ms N`: the time bound of each registry request. */
  fetchTimeoutMs?: number;
  /** `--force`: write packs that cannot work, with their report. */
  force: boolean;
  /** `--help`: print the usage and exit. */
  help: boolean;
}

/** The usage text `--help` prints. */
export const PACK_USAGE: string =
  `Vet npm packages as packs: fetch, check integrity, bundle, check, write.

Usage: deno task pack <npm-spec>... --out PACKS_DIR [flags]

Flags:
  --out DIR                 The packs folder to write into (required)
  --subpaths .,./sub        The subpaths to bundle (one package only;
                            default: every subpath the package exports)
  --registry URL            The npm registry (default: ${DEFAULT_REGISTRY})
  --fetch-timeout-ms N      How long one registry request may take, body
                            included (default: ${DEFAULT_FETCH_TIMEOUT_MS})
  --force                   Write a pack even when an entry cannot work;
                            its manifest then carries the report
  -h, --help                Print this help

A package that cannot be packed prints "error: CODE: message", CODE one of
NPM_FETCH_FAILED, NPM_NOT_FOUND, NPM_INTEGRITY_MISMATCH, NPM_PACKAGE_INVALID,
NPM_NOT_BUNDLABLE, NPM_NO_ENTRY_WORKS (see docs/packing.md), or PATH_UNUSABLE
for an --out it cannot write into.

A relative --out is read from the folder deno task was started in
(INIT_CWD), not the folder of deno.json, where the task runs.

Exit code: 0 when every pack was written clean, 1 when one was refused or
failed, 2 for bad flags.`;

const FLAGS: FlagSpec = {
  options: {
    out: { type: "string" },
    subpaths: { type: "string" },
    registry: { type: "string" },
    "fetch-timeout-ms": { type: "string" },
    force: { type: "boolean" },
    help: { type: "boolean", short: "h" },
  },
  allowPositionals: true,
  emptyValues: false,
  owner: "this command",
};

/**
 * Parses the pack CLI's flags with `node:util`'s `parseArgs` in strict mode.
 *
 * @param args The command-line arguments, such as `Deno.args`.
 * @returns The parsed flags.
 * @throws {TypeError} When a flag is unknown, repeated or lacks a value,
 * when no package or no `--out` is given, when a spec is not an npm name,
 * or when `--subpaths` is given with several packages.
 * @throws {RangeError} When `--fetch-timeout-ms` is not a whole number
 * from 1 to 2147483647.
 *
 * @example
 * ```ts
 * import { parsePackArgs } from "@cordon/cordon/cli/pack";
 * import assert from "node:assert/strict";
 *
 * const args = parsePackArgs(["date-fns@4", "marked", "--out", "packs"]);
 * assert.deepEqual(args.specs, ["date-fns@4", "marked"]);
 * assert.equal(args.outDir, "packs");
 * assert.throws(() => parsePackArgs(["date-fns"]), TypeError);
 * ```
 */
export function parsePackArgs(args: readonly string[]): PackArgs {
  const { values, switches, positionals } = readFlags(args, FLAGS);
  const help = switches.has("help");
  const out: PackArgs = {
    specs: [...positionals],
    outDir: values.get("out") ?? "",
    force: switches.has("force"),
    help,
  };
  if (help) return out;
  if (out.specs.length === 0) {
    throw new TypeError(
      "Cannot read the flags: name at least one npm package, such as date-fns@4",
    );
  }
  for (const spec of out.specs) parseNpmSpec(spec);
  if (out.outDir === "") {
    throw new TypeError(
      "Cannot read the flags: --out names the packs folder to write into",
    );
  }
  const subpaths = values.get("subpaths");
  if (subpaths !== undefined) {
    if (out.specs.length > 1) {
      throw new TypeError(
        "Cannot read the flags: --subpaths applies to one package; pack the others with another command",
      );
    }
    out.subpaths = subpaths.split(",").map((subpath) => subpath.trim())
      .filter((subpath) => subpath !== "");
  }
  const registry = values.get("registry");
  if (registry !== undefined) {
    if (!/^https?:\/\/[^\s]+$/.test(registry)) {
      throw new TypeError(
        "Cannot read the flags: --registry must be an http(s) URL",
      );
    }
    out.registry = registry;
  }
  const fetchTimeoutMs = readIntegerFlag(
    "--fetch-timeout-ms",
    values.get("fetch-timeout-ms"),
    { min: 1, max: MAX_TIMER_MS },
  );
  if (fetchTimeoutMs !== undefined) out.fetchTimeoutMs = fetchTimeoutMs;
  return out;
}

/** Where {@linkcode packCli} writes. */
export interface PackCliOptions {
  /**
   * Writes the report (or the usage).
   *
   * @default {console.log}
   */
  print?: (text: string) => void;
  /**
   * Writes an error line.
   *
   * @default {console.error}
   */
  printError?: (text: string) => void;
}

/** `1 entry`, `2 entries`. */
function count(n: number, noun: string, plural = `${noun}s`): string {
  return `${n} ${n === 1 ? noun : plural}`;
}

function describe(
  report: PackReport,
  outDir: string,
  force: boolean,
): string[] {
  const lines = [
    `${report.name}@${report.version} (${report.license}, ${
      report.integrity.slice(0, 22)
    }…): ${count(report.entries.length, "entry", "entries")}, ${
      count(report.modules, "module")
    }, ${count(report.bytes, "byte")}`,
  ];
  for (const entry of report.entries) {
    const mark = entry.problems.length > 0 ? "refused" : "ok";
    lines.push(`  ${entry.subpath}: ${mark}`);
    for (const problem of entry.problems) {
      lines.push(`    cannot work: ${problem}`);
    }
    for (const warning of entry.warnings) lines.push(`    note: ${warning}`);
  }
  for (const skipped of report.skipped) {
    lines.push(`  ${skipped.subpath}: left out, it ${skipped.reason}`);
  }
  const refused = report.entries.some((entry) => entry.problems.length > 0);
  lines.push(
    report.written
      ? `  written to ${outDir}/${report.name}${
        !refused
          ? ""
          : force
          ? ", every entry included and the report in its manifest (--force)"
          : ", the refused entries left out and listed in its manifest's report"
      }`
      : "  not written",
  );
  return lines;
}

/** The error line of a package no entry of which works. */
function noEntryWorksLine(report: PackReport): string {
  const code: ErrorCode = "NPM_NO_ENTRY_WORKS";
  return `error: ${code}: Cannot pack ${report.name}@${report.version}: no entry works in a sandbox (the report above gives each entry's reasons); pack another build or version of the package, or pass --force to write it with the report`;
}

/**
 * What keeps `--out` from being a packs folder, before any package is
 * fetched: an existing path that is no folder.
 */
async function outDirProblem(outDir: string): Promise<string | undefined> {
  try {
    if ((await Deno.stat(outDir)).isDirectory) return undefined;
    return "it is a file, not a folder; pass the packs folder to write into (it is created when absent)";
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    return `it cannot be read (${
      error instanceof Error ? error.name : "unexpected failure"
    }); pass a packs folder this command may read and write`;
  }
}

/**
 * Runs the CLI: packs each named package and prints what it checked.
 *
 * @param args The command-line arguments, such as `Deno.args`.
 * @param options Where to write.
 * @returns The exit code: 0 when every pack was written clean (or
 * `--help`), 1 when one was refused or failed, 2 for bad flags.
 *
 * @example
 * ```ts ignore
 * import { packCli } from "@cordon/cordon/cli/pack";
 *
 * Deno.exit(await packCli(["date-fns@4", "--out", "./packs"]));
 * ```
 */
export async function packCli(
  args: readonly string[],
  options: PackCliOptions = {},
): Promise<number> {
  const { print = console.log, printError = console.error } = readOptions(
    "run the pack command",
    options,
    { print: true, printError: true },
  );
  const parsed = parseOrAnswer(parsePackArgs, args, PACK_USAGE, {
    print,
    printError,
  });
  if (typeof parsed === "number") return parsed;
  const { outDir } = parsed;
  const outProblem = await outDirProblem(outDir);
  if (outProblem !== undefined) {
    printError(
      pathErrorLine(`Cannot write into --out: ${outProblem}`),
    );
    return 1;
  }
  let code = 0;
  for (const spec of parsed.specs) {
    try {
      const report = await packNpm(spec, {
        outDir,
        force: parsed.force,
        ...(parsed.subpaths === undefined ? {} : { subpaths: parsed.subpaths }),
        ...(parsed.registry === undefined ? {} : { registry: parsed.registry }),
        ...(parsed.fetchTimeoutMs === undefined
          ? {}
          : { fetchTimeoutMs: parsed.fetchTimeoutMs }),
      });
      // Subpaths, file names and load failures come from the package.
      for (const line of describe(report, parsed.outDir, parsed.force)) {
        print(operatorText(line));
      }
      const clean = report.entries.every((entry) =>
        entry.problems.length === 0
      );
      if (!report.written) printError(operatorText(noEntryWorksLine(report)));
      if (!report.written || !clean) code = 1;
    } catch (error) {
      printError(operatorText(
        error instanceof CordonError
          ? `error: ${error.code}: ${error.message}`
          : isOsError(error)
          ? pathErrorLine(
            `Cannot write the pack into --out: ${error.name}; check that it is a folder this command may write`,
          )
          : `error: ${messageOf(error)}`,
      ));
      code = 1;
    }
  }
  return code;
}

if (import.meta.main) {
  enterTaskStartDir();
  Deno.exit(await packCli(Deno.args));
}
