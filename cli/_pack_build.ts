/**
 * Builds one pack in the work folder: bundles its entries (together, and
 * alone those marked so or that break the shared build), runs the static
 * checks, stages the pack with its manifest and loads it in the hardened
 * realm, giving its CommonJS entries named exports when they still load.
 *
 * @module
 */

import { CordonError } from "../protocol/cordon_error.ts";
import type { NpmOrigin, PackManifestInput } from "../protocol/mod.ts";
import {
  exportNames,
  isCommonJsEntry,
  REEXPORT_PROBE_NAME,
  reExportTarget,
  statedExportNames,
  withNamedExports,
  withReExportedNames,
  withReExportProbe,
} from "./_cjs_exports.ts";
import {
  aloneWhereNamedAlike,
  emptyBuild,
  joinBuilds,
} from "./_alone_builds.ts";
import {
  bundleEntries,
  type BundleOutput,
  unbundlableNameReason,
} from "./_npm_bundle.ts";
import type { EntryPoint } from "./_npm_entries.ts";
import { nodeRemedies } from "./_node_remedy.ts";
import { type PackageTree, uninstalledPeers } from "./_npm_fetch.ts";
import { checkBundle, type EntryCheck } from "./_pack_checks.ts";
import {
  defaultExportKeys,
  loadCheck,
  type LoadCheckBudget,
  type LoadCheckOptions,
} from "./_pack_load_check.ts";
import { bundledRefs } from "./_pack_origin.ts";
import { type BuiltPack, sharedFailures } from "./_pack_rounds.ts";
import { writeFiles } from "./_pack_write.ts";

const utf8 = new TextDecoder("utf-8", { fatal: true });

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
  /** The time the load checks of every round have left, shared by them. */
  budget: LoadCheckBudget;
  /**
   * Ends the bundler's process and the load check's runs, and makes the
   * build reject with its reason instead of taking the abort for an
   * entry's failure.
   */
  signal?: AbortSignal;
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
  const { tree, aloneBuilds, signal } = plan;
  const unbundlable: EntryCheck[] = [];
  let failure: unknown;
  const entries = plan.entries.filter((entry) => {
    const reason = unbundlableNameReason(entry);
    if (reason === undefined) return true;
    failure ??= new Error(reason);
    unbundlable.push(unbundledCheck(entry, new Error(reason)));
    return false;
  });
  const external = uninstalledPeers(tree);
  const bundle: Bundler = (some) =>
    bundleEntries(
      work,
      tree.rootDir,
      some,
      external,
      signal === undefined ? {} : { signal },
    );
  const together = entries.filter((entry) => entry.alone !== true);
  const { bundle: shared, unbundled } = together.length === 0
    ? { bundle: emptyBuild(), unbundled: [] }
    : await bundleTogether(bundle, together, signal);
  unbundled.push(...unbundlable);
  const alone = new Map<string, BundleOutput>();
  for (const entry of entries) {
    if (entry.alone !== true) continue;
    const key = JSON.stringify([entry.subpath, entry.file]);
    try {
      const build = aloneBuilds.get(key) ?? await bundle([entry]);
      aloneBuilds.set(key, build);
      alone.set(entry.subpath, build);
    } catch (error) {
      signal?.throwIfAborted();
      rethrowMachineFault(error);
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
  signal: AbortSignal | undefined,
): Promise<{ bundle: BundleOutput; unbundled: EntryCheck[] }> {
  try {
    return { bundle: await bundle(entries), unbundled: [] };
  } catch (error) {
    signal?.throwIfAborted();
    rethrowMachineFault(error);
    if (entries.length < 2) throw error;
    const builds: EntryPoint[] = [];
    const unbundled: EntryCheck[] = [];
    for (const entry of entries) {
      try {
        await bundle([entry]);
        builds.push(entry);
      } catch (alone) {
        signal?.throwIfAborted();
        rethrowMachineFault(alone);
        unbundled.push(unbundledCheck(entry, alone));
      }
    }
    if (builds.length === 0 || unbundled.length === 0) throw error;
    return { bundle: await bundle(builds), unbundled };
  }
}

/**
 * A CordonError from the bundler is about the machine (a temp folder or
 * cache Deno cannot use), not about one entry: it ends the whole build.
 */
function rethrowMachineFault(error: unknown): void {
  if (error instanceof CordonError) throw error;
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
export async function buildPack(
  work: string,
  plan: PackPlan,
): Promise<BuiltPack> {
  const { tree, origin, licenseBytes, report, budget, signal } = plan;
  const entries = aloneWhereNamedAlike(plan.entries);
  // The bundler left these as imports; the checks name them as packages,
  // also one named like a Node built-in.
  const leftOut = uninstalledPeers(tree);
  const { root } = tree;
  const nodeRemedy = nodeRemedies(entries, {
    hasExports: root.manifest.exports !== undefined &&
      root.manifest.exports !== null,
    files: root.files.map((file) => file.path),
  });
  const checkOptions = signal === undefined
    ? { leftOut, nodeRemedy }
    : { signal, leftOut, nodeRemedy };
  const what = `${root.name}@${root.version}`;
  let bundle: BundleOutput;
  let unbundled: EntryCheck[];
  try {
    ({ bundle, unbundled } = await bundleWhatBuilds(work, {
      ...plan,
      entries,
    }));
  } catch (error) {
    signal?.throwIfAborted();
    // A machine fault keeps its code: the package is not to blame.
    throw new CordonError(
      error instanceof CordonError ? error.code : "NPM_NOT_BUNDLABLE",
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
    ...await checkBundle(sources, bundle.entryFiles, { leftOut, nodeRemedy }),
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
  await writeFiles(`${stage}/${root.name}`, packFiles(), signal);
  // Discovery refuses a whole pack for one bad module, so the sandbox is
  // tried only once every entry passed the static checks.
  const loadable = checks.every((check) => check.problems.length === 0)
    ? checks.map((check) => check.subpath)
    : [];
  let failures = await loadCheck(
    stage,
    root.name,
    loadable,
    budget,
    checkOptions,
  );
  if (failures.size === 0 && loadable.length > 0) {
    // A CommonJS entry offers its `module.exports` properties as named
    // exports, as in Node and Deno; the rewritten pack is checked again.
    // If reading them fails at import (a getter that throws), the pack
    // goes back to the default export alone.
    const named = await namedCommonJsEntries(
      stage,
      root.name,
      bundle,
      budget,
      checkOptions,
    );
    if (named.size > 0) {
      const original = new Map(
        [...named.keys()].map((path) => [path, bundle.files.get(path)!]),
      );
      const restage = async (
        modules: ReadonlyMap<string, Uint8Array<ArrayBuffer>>,
      ) => {
        for (const [path, bytes] of modules) bundle.files.set(path, bytes);
        await writeFiles(`${stage}/${root.name}`, packFiles(), signal);
        return await loadCheck(
          stage,
          root.name,
          loadable,
          budget,
          checkOptions,
        );
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
    unchecked: new Set(
      [...failures].filter(([, failure]) => failure.unchecked === true)
        .map(([subpath]) => subpath),
    ),
  };
}

/** The CommonJS entries that get named exports: module path to new text. */
async function namedCommonJsEntries(
  stage: string,
  name: string,
  bundle: BundleOutput,
  budget: LoadCheckBudget,
  options: LoadCheckOptions,
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
    budget.limits,
    options,
  );
  const named = new Map<string, string>();
  for (const [subpath, path] of common) {
    const names = exportNames(keys.get(subpath) ?? []);
    named.set(path, withNamedExports(texts.get(path)!, names));
  }
  const reExported = await reExportingEntries(
    stage,
    name,
    bundle,
    budget,
    options,
  );
  for (const [path, text] of reExported) named.set(path, text);
  return named;
}

/**
 * The ES module entries that re-export a CommonJS module with `export *`,
 * given the names Node and Deno give them: module path to new text. The
 * names are read from a probe of each entry, which offers the namespace
 * object the bundler copies them into; the stage gets the probes.
 */
async function reExportingEntries(
  stage: string,
  name: string,
  bundle: BundleOutput,
  budget: LoadCheckBudget,
  options: LoadCheckOptions,
): Promise<Map<string, string>> {
  const probed: [string, string, string, string][] = [];
  for (const [subpath, path] of bundle.entryFiles) {
    const text = utf8.decode(bundle.files.get(path)!);
    const target = reExportTarget(text);
    if (target === undefined) continue;
    probed.push([subpath, path, text, target]);
    await Deno.writeTextFile(
      `${stage}/${name}/${path}`,
      withReExportProbe(text, target),
    );
  }
  const keys = await defaultExportKeys(
    stage,
    name,
    probed.map(([subpath]) => subpath),
    budget.limits,
    options,
    REEXPORT_PROBE_NAME,
  );
  const rewritten = new Map<string, string>();
  for (const [subpath, path, text, target] of probed) {
    const stated = statedExportNames(text);
    const names = exportNames(keys.get(subpath) ?? []).filter((key) =>
      !stated.has(key)
    );
    rewritten.set(path, withReExportedNames(text, target, names));
  }
  return rewritten;
}
