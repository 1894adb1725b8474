/**
 * The rounds of the pack command: after each build of a pack, bundles
 * alone each entry that threw at import in the build it shared with the
 * others, puts the package's next build in place of another entry that
 * cannot work, or leaves the entry out, and builds again until every
 * entry left works (with `--force`, keeps every entry and the report).
 *
 * @module
 */

import type { NpmOrigin } from "../protocol/mod.ts";
import type { EntryPoint } from "./_npm_entries.ts";
import type { EntryCheck } from "./_pack_checks.ts";
import type { LoadFailure } from "./_pack_load_check.ts";

/** A pack folder built and checked in the work folder. */
export interface BuiltPack {
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
  /**
   * The entries the load check ran out of time for before they had their
   * own: no other build of them is tried.
   */
  unchecked: ReadonlySet<string>;
}

/**
 * The entries that threw at import in a build shared with other entries
 * for a reason a build of their own may lack; an entry that had the
 * build to itself has nothing to gain.
 */
export function sharedFailures(
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
    browserFiles: entry.browserFiles,
    // The reasons come last, after the build they belong to: put after the
    // next build's name, "importing it fails" read as that build's result.
    notes: [
      ...entry.notes,
      `the package's next build, ./${file}, was tried in place of ./${entry.file}, which cannot work in the sandbox: ${
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
export async function settle(
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
        : pack.unchecked.has(entry.subpath)
        ? undefined
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
