/**
 * The disk catalog's folder records as lines of the discovery index, both
 * ways: a line becomes a record again only when it agrees with itself and
 * with its folder, and a discovery's provable records are written as lines
 * when anything changed since the known ones. The file itself (its format,
 * the proofs, the atomic write) belongs to `_discovery_index.ts`.
 *
 * @module
 */

import type {
  DiscoveryIndexPack,
  DiscoveryOutcome,
  ModuleSummary,
  PackSummary,
} from "../protocol/mod.ts";
import {
  DISCOVERY_RULES,
  filesOfProof,
  type IndexWarning,
  type PackProof,
  proofOfLine,
  writeIndexFile,
} from "./_discovery_index.ts";
import type { CatalogState, Known } from "./_disk_discovery.ts";
import {
  type FolderRecord,
  installedPack,
  rejectedFolder,
} from "./_pack_folder.ts";

/** No subpath exports the module: one shared, frozen list. */
const NOT_EXPORTED: string[] = Object.freeze([]) as unknown as string[];

/**
 * Keeps one copy of each pack file path: packs tend to repeat the same
 * paths, and an index holds every one.
 */
class Strings {
  #seen = new Map<string, string>();
  one(text: string): string {
    const seen = this.#seen.get(text);
    if (seen !== undefined) return seen;
    this.#seen.set(text, text);
    return text;
  }
}

/**
 * A folder's record from its index line, when the line agrees with itself
 * and its folder: every module is a file it proves, every dependency and
 * export names a module, and the pack's name is its folder's.
 */
function recordOfLine(
  line: DiscoveryIndexPack,
  proof: PackProof,
  strings: Strings,
): FolderRecord | undefined {
  if (proof.paths[0] !== "package.json") return undefined;
  const { outcome, folder: rel } = line;
  if (!outcome.ok) {
    return {
      outcome: rejectedFolder(
        rel,
        outcome.name,
        outcome.diagnostic.code,
        outcome.diagnostic.message,
      ),
      proof,
    };
  }
  if (outcome.name.toLowerCase() !== rel.toLowerCase()) return;
  const proved = new Set(proof.paths);
  const entries = outcome.modules;
  const exportedAs = new Map<string, string[]>();
  for (const [subpath, file] of Object.entries(outcome.exports)) {
    exportedAs.set(file, [...(exportedAs.get(file) ?? []), subpath].sort());
  }
  for (const [path, , , , dependencies] of entries) {
    if (!proved.has(path)) return undefined;
    if (!dependencies.every((at) => at < entries.length)) return undefined;
  }
  // Arrays made by map have their exact length; ones grown by push keep
  // spare room, which a hundred thousand modules would pay for.
  const modules = entries.map((
    [path, id, digest, graphDigest, dependencies],
  ): ModuleSummary => ({
    id,
    path: strings.one(path),
    exportedAs: exportedAs.get(path) ?? NOT_EXPORTED,
    digest,
    graphDigest,
    dependencyIds: dependencies.map((at) => entries[at]![1]),
  }));
  const paths = new Set(modules.map((module) => module.path));
  for (const file of exportedAs.keys()) {
    if (!paths.has(file)) return undefined;
  }
  const summary: PackSummary = {
    name: outcome.name,
    version: outcome.version,
    graphDigest: outcome.graphDigest,
    modules,
  };
  return {
    outcome: {
      ok: true,
      pack: installedPack(summary, outcome.exports, rel),
    },
    proof: {
      paths: proof.paths.map((path) => strings.one(path)),
      stats: proof.stats,
    },
  };
}

/** Turns index lines into folder records, sharing repeated paths. */
export function recordReader(): (
  line: DiscoveryIndexPack,
) => FolderRecord | undefined {
  const strings = new Strings();
  return (line) => recordOfLine(line, proofOfLine(line), strings);
}

/** A folder's index line. */
function lineOfRecord(
  folder: string,
  record: FolderRecord & { proof: PackProof },
): DiscoveryIndexPack {
  const { outcome } = record;
  let written: DiscoveryOutcome;
  if (outcome.ok) {
    const { summary, exports } = outcome.pack;
    const position = new Map(summary.modules.map((m, i) => [m.id, i]));
    written = {
      ok: true,
      name: summary.name,
      version: summary.version,
      graphDigest: summary.graphDigest,
      exports: { ...exports },
      modules: summary.modules.map((m) => [
        m.path,
        m.id,
        m.digest,
        m.graphDigest,
        m.dependencyIds.map((id) => position.get(id)!),
      ]),
    };
  } else {
    written = {
      ok: false,
      ...(outcome.name === undefined ? {} : { name: outcome.name }),
      diagnostic: { ...outcome.diagnostic },
    };
  }
  return { folder, files: filesOfProof(record.proof), outcome: written };
}

/** Whether a discovery read a pack, or a folder went away, since `known`. */
export function changedSince(
  known: Known | undefined,
  state: CatalogState,
): boolean {
  return known === undefined || state.read > 0 ||
    known.folders.size !== state.folders.size;
}

/** Writes a discovery's provable folders to the index file. */
export function saveIndex(
  path: string,
  maxModuleBytes: number,
  state: CatalogState,
  warn: IndexWarning,
): Promise<void> {
  return writeIndexFile(
    path,
    {
      format: 1,
      rules: DISCOVERY_RULES,
      maxModuleBytes,
      scannedAt: state.scannedAt,
    },
    indexLines(state),
    warn,
  );
}

/** The index lines of a discovery's provable folders, made one at a time. */
function* indexLines(state: CatalogState): Generator<DiscoveryIndexPack> {
  for (const [folder, record] of state.folders) {
    if (record.proof !== undefined) {
      yield lineOfRecord(folder, { ...record, proof: record.proof });
    }
  }
}
