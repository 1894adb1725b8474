/**
 * The disk catalog's discovery index: what proves each pack's files
 * unchanged since discovery read them, kept in memory between rescans and,
 * with `indexPath`, in a file between starts, so unchanged packs are
 * neither read nor hashed again.
 *
 * A file's proof is what `lstat` reports about it: size, modification and
 * status change times, device and inode. A proof is trusted only when the
 * file is a regular file reached through no symbolic link inside the pack
 * and its times are older than the scan that took the proof by
 * {@linkcode RACY_MS}: a file written twice within the time resolution of
 * its file system, once before and once after its proof was taken, keeps
 * its size and time, so discovery reads such a file again until it is old
 * enough (git's rule for racily clean entries).
 *
 * The file holds one JSON line of {@linkcode DiscoveryIndexHeader} and one
 * line of {@linkcode DiscoveryIndexPack} per pack folder (schemas in
 * `protocol/`). It is written to a temporary file beside it, synced and
 * renamed over it (protocol's `replaceFile`), so a reader, or a start after
 * a power loss, sees the old index or the new one, never half of one.
 *
 * @module
 */

import { operatorJson } from "../protocol/operator_text.ts";
import { errorName } from "../protocol/error_name.ts";
import {
  type DiscoveryIndexHeader,
  DiscoveryIndexHeaderSchema,
  type DiscoveryIndexPack,
  type ErrorCode,
  isDiscoveryIndexPack,
} from "../protocol/mod.ts";
import { parseUntrusted } from "./_schema_parse.ts";
import { join } from "./_host_path.ts";
import { replaceFile } from "../protocol/replace_file.ts";
import type { FileHandle } from "node:fs/promises";
import { type HostAsyncFile, type HostFileInfo, hostFs } from "./_host_fs.ts";

/**
 * The version of the rules that turn a pack's files into what the index
 * holds (manifest schema, import scanning, ids and digests). Change it with
 * any change to those rules: an index of other rules is ignored.
 * `discovery_rules_test.ts` fails whenever the modules that make those
 * decisions change, until someone records that this was looked at.
 */
export const DISCOVERY_RULES = "cordon-discovery-7";

/** How much older than the scan a file's times must be to be trusted. */
export const RACY_MS = 2000;

/** Reports why the index file was not used or not written. */
export type IndexWarning = (code: ErrorCode, message: string) => void;

/**
 * What proves a pack folder's files unchanged: the files discovery read
 * (`package.json` first) and five numbers each, in order: size, mtime,
 * ctime, device, inode (`NaN` where unknown).
 */
export interface PackProof {
  readonly paths: readonly string[];
  readonly stats: readonly number[];
}

/** Fields per file in {@linkcode PackProof.stats}. */
const FIELDS = 5;

/** The five proof numbers of a file as `lstat` or `stat` saw it. */
export function statsOf(info: HostFileInfo): number[] {
  return [
    info.size,
    info.mtime?.getTime() ?? NaN,
    info.ctime?.getTime() ?? NaN,
    info.dev ?? NaN,
    info.ino ?? NaN,
  ];
}

/** A pack's proof from its files' paths and their numbers, in order. */
export function packProof(paths: string[], stats: number[]): PackProof {
  // A copy at its exact length, of unboxed doubles on V8's heap: a
  // Float64Array apiece cost 10,000 packs about 2 MB more, most of it in
  // small allocations outside the heap.
  return { paths, stats: stats.slice() };
}

function same(a: number, b: number): boolean {
  return a === b || (Number.isNaN(a) && Number.isNaN(b));
}

/**
 * The folders between a pack folder and one of its files, outermost
 * first: `./lib/util/a.js` is inside `lib` and `lib/util`.
 */
export function foldersOf(file: string): string[] {
  const folders: string[] = [];
  const inside = file.startsWith("./") ? 2 : 0;
  for (
    let slash = file.indexOf("/", inside);
    slash !== -1;
    slash = file.indexOf("/", slash + 1)
  ) {
    folders.push(file.slice(inside, slash));
  }
  return folders;
}

/**
 * `lstat` of a pack's file, when neither it nor a folder between it and
 * the pack folder is a link: then the path as written is its real path.
 * `undefined` when one is a link or not there.
 *
 * @param dir The pack folder.
 * @param file The file, `package.json` or `./a/b.js`.
 * @param real Folders of this pack already found real, added to.
 */
export function lstatUnlinked(
  dir: string,
  file: string,
  real: Set<string>,
): HostFileInfo | undefined {
  const fs = hostFs();
  try {
    for (const folder of foldersOf(file)) {
      if (real.has(folder)) continue;
      const info = fs.lstatSync(join(dir, folder));
      if (!info.isDirectory || info.isSymlink) return undefined;
      real.add(folder);
    }
    const info = fs.lstatSync(join(dir, file));
    return info.isSymlink ? undefined : info;
  } catch {
    return undefined;
  }
}

/**
 * Whether every file of a proof is, now, the file discovery read: a
 * regular file, reached through real folders only, with the same size,
 * times, device and inode, and times older than `trustBefore`. One
 * `lstat` per file and per folder inside the pack: fewer cannot see a
 * link put in place of a folder.
 *
 * @param dir The pack folder as listed.
 * @param proof The pack's proof.
 * @param trustBefore Times at or after this (ms since the epoch) are racy.
 */
export function provenUnchanged(
  dir: string,
  proof: PackProof,
  trustBefore: number,
): boolean {
  const { paths, stats } = proof;
  const folders = new Set<string>();
  for (let i = 0; i < paths.length; i++) {
    const info = lstatUnlinked(dir, paths[i]!, folders);
    if (info === undefined || !info.isFile) return false;
    const now = statsOf(info);
    const at = i * FIELDS;
    for (let field = 0; field < FIELDS; field++) {
      if (!same(now[field]!, stats[at + field]!)) return false;
    }
    // NaN (unknown) compares false: a time that is not known is racy.
    if (!(now[1]! < trustBefore)) return false;
    if (!Number.isNaN(now[2]!) && !(now[2]! < trustBefore)) return false;
  }
  return true;
}

/** The proof an index line gives for its pack. */
export function proofOfLine(line: DiscoveryIndexPack): PackProof {
  const paths: string[] = [];
  const stats: number[] = [];
  for (const [path, size, mtimeMs, ctimeMs, dev, ino] of line.files) {
    paths.push(path);
    stats.push(size, mtimeMs, ctimeMs ?? NaN, dev ?? NaN, ino ?? NaN);
  }
  return packProof(paths, stats);
}

/** A proof as the file proofs of an index line. */
export function filesOfProof(
  proof: PackProof,
): DiscoveryIndexPack["files"] {
  const known = (n: number) => (Number.isNaN(n) ? null : n);
  return proof.paths.map((path, i) => {
    const at = i * FIELDS;
    const s = proof.stats;
    return [
      path,
      s[at]!,
      s[at + 1]!,
      known(s[at + 2]!),
      known(s[at + 3]!),
      known(s[at + 4]!),
    ];
  });
}

/** A discovery index read from its file, its lines turned into records. */
export interface IndexFile<T> {
  header: DiscoveryIndexHeader;
  /** The records by folder; lines that disagree with themselves are left out. */
  packs: Map<string, T>;
}

function ignored(warn: IndexWarning, why: string): undefined {
  warn(
    "DISCOVERY_INDEX_IGNORED",
    `Cannot use the discovery index: ${why}; discovery reads every pack and writes the index again`,
  );
  return undefined;
}

const CHUNK_BYTES = 1024 * 1024;
const NEWLINE = 0x0a;

/**
 * The longest line read: far longer than discovery writes (a pack line
 * holds a few hundred bytes a module), and short enough that a damaged or
 * mistaken file, gigabytes with no newline, is refused before it fills the
 * host's memory.
 */
const MAX_LINE_BYTES = 64 * 1024 * 1024;

/** Thrown by {@linkcode linesOf} for a line past {@linkcode MAX_LINE_BYTES}. */
class LineTooLong extends Error {}

/**
 * The lines of a file as bytes, read a chunk at a time so a large index is
 * never held whole in memory; each is valid until the next is asked for.
 * Each line is decoded on its own ({@linkcode parseLine}): a chunk decoded
 * whole, joined with the rest of the last one and split, made three
 * megabytes of short-lived strings a chunk. (A `\n` byte is never part of
 * a longer UTF-8 sequence.) A line past {@linkcode MAX_LINE_BYTES} throws
 * `LineTooLong`.
 */
async function* linesOf(file: HostAsyncFile): AsyncGenerator<Uint8Array> {
  let buffer = new Uint8Array(CHUNK_BYTES);
  let filled = 0;
  for (;;) {
    if (filled === buffer.length) {
      // One line longer than the buffer: make room for the rest of it.
      if (buffer.length >= MAX_LINE_BYTES) throw new LineTooLong();
      const larger = new Uint8Array(buffer.length * 2);
      larger.set(buffer);
      buffer = larger;
    }
    const read = await file.read(buffer.subarray(filled));
    if (read === null) break;
    const end = filled + read;
    let start = 0;
    for (
      let newline = buffer.indexOf(NEWLINE, filled);
      newline !== -1 && newline < end;
      newline = buffer.indexOf(NEWLINE, start)
    ) {
      yield buffer.subarray(start, newline);
      start = newline + 1;
    }
    buffer.copyWithin(0, start, end);
    filled = end - start;
  }
  if (filled > 0) yield buffer.subarray(0, filled);
}

const decoder = new TextDecoder("utf-8", { fatal: true });

/**
 * A line's JSON, or `undefined` when it is not UTF-8 JSON text: either
 * way the file is damaged. Read before the next line, which may reuse
 * the line's bytes.
 */
function parseLine(line: Uint8Array): unknown {
  try {
    return JSON.parse(decoder.decode(line));
  } catch {
    return undefined;
  }
}

/** Why a header cannot be used, or `undefined` when it can. */
function headerProblem(
  json: unknown,
  maxModuleBytes: number,
): string | undefined {
  if (json === undefined) {
    return "it is not an index file (its first line is not JSON)";
  }
  const header = parseUntrusted(DiscoveryIndexHeaderSchema, json);
  if (!header.success) {
    const format = (json as { format?: unknown } | null)?.format;
    return format !== 1 && format !== undefined
      ? `it has format ${operatorJson(format)}, and this version reads format 1`
      : "its header does not match the discovery index schema";
  }
  if (header.data.rules !== DISCOVERY_RULES) {
    return "it was written under other discovery rules";
  }
  if (header.data.maxModuleBytes !== maxModuleBytes) {
    return "it was written under another maxModuleBytes";
  }
  return undefined;
}

/**
 * Reads the index file a line at a time, turning each pack line into a
 * record as it goes. A missing file is no index, silently; anything else
 * that keeps it from being used (unreadable, damaged, another format, rules
 * or size cap) is no index, with a warning.
 *
 * @param path The index file.
 * @param maxModuleBytes The size cap this discovery runs under.
 * @param warn Where warnings go.
 * @param toRecord Turns a valid pack line into a record, or `undefined`
 * when the line disagrees with itself (that pack is read again).
 */
export async function readIndexFile<T>(
  path: string,
  maxModuleBytes: number,
  warn: IndexWarning,
  toRecord: (line: DiscoveryIndexPack) => T | undefined,
): Promise<IndexFile<T> | undefined> {
  let file: HostAsyncFile;
  try {
    if (!(await isFileOrAbsent(path))) return ignored(warn, NOT_A_FILE);
    file = await hostFs().open(path);
  } catch (error) {
    if (hostFs().errorKind(error) === "not-found") return undefined;
    return ignored(warn, `it cannot be read (${errorName(error)})`);
  }
  if (!(await openedFile(file))) {
    // Put in place of the file checked above, since the check.
    await file.close();
    return ignored(warn, NOT_A_FILE);
  }
  let number = 0;
  try {
    let header: DiscoveryIndexHeader | undefined;
    const packs = new Map<string, T>();
    for await (const line of linesOf(file)) {
      number++;
      const json = parseLine(line);
      if (header === undefined) {
        const problem = headerProblem(json, maxModuleBytes);
        if (problem !== undefined) return ignored(warn, problem);
        header = json as DiscoveryIndexHeader;
        continue;
      }
      if (json === undefined) {
        return ignored(
          warn,
          `line ${number} is not UTF-8 JSON text (a damaged file)`,
        );
      }
      // The schema's own rule, compiled: a zod parse of each line cost a
      // 10,000-pack restart about a second.
      if (!isDiscoveryIndexPack(json)) {
        return ignored(
          warn,
          `line ${number} does not match the discovery index schema`,
        );
      }
      const record = toRecord(json);
      if (record !== undefined) packs.set(json.folder, record);
    }
    if (header === undefined) return ignored(warn, "it is empty");
    return { header, packs };
  } catch (error) {
    if (error instanceof LineTooLong) {
      return ignored(
        warn,
        `line ${number + 1} is longer than ${
          MAX_LINE_BYTES / 1024 / 1024
        } MiB, more than any line discovery writes (a damaged file)`,
      );
    }
    return ignored(warn, `it cannot be read (${errorName(error)})`);
  } finally {
    await file.close();
  }
}

/** Whether an opened index is a regular file, which a read can finish. */
async function openedFile(file: HostAsyncFile): Promise<boolean> {
  try {
    return (await file.stat()).isFile;
  } catch {
    return false;
  }
}

/** Why an index path that names no regular file is neither read nor written. */
const NOT_A_FILE = "it is not a regular file";

/**
 * Whether `path` names a regular file (through links) or nothing yet. A
 * named pipe would block the read until a writer comes, a device such as
 * `/dev/zero` never ends, and renaming the new index over any of them
 * would replace the node itself (`/dev/null`, for a server run as root).
 */
async function isFileOrAbsent(path: string): Promise<boolean> {
  try {
    return (await hostFs().stat(path)).isFile;
  } catch (error) {
    if (hostFs().errorKind(error) === "not-found") return true;
    throw error;
  }
}

/**
 * Writes the index file: to a temporary file beside it, synced, then renamed
 * over it. A failure leaves the old file (or none) and warns; it never
 * throws.
 *
 * @param path The index file.
 * @param header The header line.
 * @param packs The pack lines.
 * @param warn Where a failure goes.
 */
export async function writeIndexFile(
  path: string,
  header: DiscoveryIndexHeader,
  packs: Iterable<DiscoveryIndexPack>,
  warn: IndexWarning,
): Promise<void> {
  const unwritable = (why: string) =>
    warn(
      "DISCOVERY_INDEX_UNWRITABLE",
      `Cannot write the discovery index: ${why}; the next start reads every pack again, so point the index at a file in a folder the server may write`,
    );
  try {
    if (!(await isFileOrAbsent(path))) return unwritable(NOT_A_FILE);
  } catch (error) {
    return unwritable(errorName(error));
  }
  await removeLeftTemporaries(path);
  const { folder, name } = splitPath(path);
  try {
    await replaceFile(
      folder,
      name,
      (file) => writeLines(file, header, packs),
      { temporaryPrefix: `${name}.` },
    );
  } catch (error) {
    unwritable(errorName(error));
  }
}

/** The folder of `path` (ending in its separator, `./` for none) and its last part. */
function splitPath(path: string): { folder: string; name: string } {
  const cut = Math.max(path.lastIndexOf("/"), path.lastIndexOf("\\"));
  return {
    folder: cut < 0 ? "./" : path.slice(0, cut + 1),
    name: path.slice(cut + 1),
  };
}

/** A temporary file of {@linkcode writeIndexFile}: the index's name, a UUID, `.tmp`. */
const TEMPORARY_SUFFIX =
  /^\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.tmp$/;

/**
 * How long a temporary file of the index must have gone unwritten to be
 * taken for one a dead process left. A write in flight writes its file a
 * chunk at a time and renames it at once; another server sharing the index
 * may be writing one now.
 */
const LEFT_AFTER_MS = 60_000;

/**
 * Removes the temporary files that earlier writes of the index at `path`
 * left when their process died before the rename: each holds a whole
 * index, and a server killed while it starts would otherwise leave one
 * more each time. One written in the last {@linkcode LEFT_AFTER_MS} is
 * left alone: removing another server's write in flight made its rename
 * fail. Best effort: a folder it may not list keeps them.
 */
async function removeLeftTemporaries(path: string): Promise<void> {
  const { folder, name } = splitPath(path);
  // Asked first: a server not allowed to list the folder is not prompted.
  const fs = hostFs();
  if (!fs.mayRead(folder)) return;
  try {
    for await (const entry of fs.readDir(folder)) {
      const rest = entry.name.slice(name.length);
      if (
        entry.isFile && entry.name.startsWith(name) &&
        TEMPORARY_SUFFIX.test(rest) &&
        await unwrittenSince(folder + entry.name, Date.now() - LEFT_AFTER_MS)
      ) {
        await fs.remove(folder + entry.name).catch(() => {});
      }
    }
  } catch {
    // Not listable (no permission, gone): nothing to tidy here.
  }
}

/** Whether the file at `path` was last written before `time` (ms). */
async function unwrittenSince(path: string, time: number): Promise<boolean> {
  try {
    const written = (await hostFs().lstat(path)).mtime?.getTime();
    return written !== undefined && written < time;
  } catch {
    return false;
  }
}

/** Writes the lines a chunk at a time, so the index is never whole in memory. */
async function writeLines(
  file: FileHandle,
  header: DiscoveryIndexHeader,
  packs: Iterable<DiscoveryIndexPack>,
): Promise<void> {
  const encoder = new TextEncoder();
  let chunk = JSON.stringify(header) + "\n";
  for (const pack of packs) {
    chunk += JSON.stringify(pack) + "\n";
    if (chunk.length >= CHUNK_BYTES) {
      await writeAll(file, encoder.encode(chunk));
      chunk = "";
    }
  }
  await writeAll(file, encoder.encode(chunk));
}

async function writeAll(file: FileHandle, bytes: Uint8Array): Promise<void> {
  for (let done = 0; done < bytes.length;) {
    done += (await file.write(bytes.subarray(done))).bytesWritten;
  }
}
