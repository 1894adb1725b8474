/**
 * Reads the files of one pack folder for discovery, safely: each file is
 * checked on its real path to stay inside the pack folder, held to a size
 * cap and decoded as UTF-8, and `package.json` is parsed against the pack
 * manifest schema. On the way it collects what proves each file unchanged
 * later, for the discovery index. A file that breaks a rule throws a
 * {@linkcode PackRejection} with the code and remedy of its pack's
 * diagnostic.
 *
 * @module
 */

import { operatorText } from "../protocol/operator_text.ts";
import {
  type ErrorCode,
  type PackManifest,
  PackManifestSchema,
} from "../protocol/mod.ts";
import { parseUntrusted } from "./_schema_parse.ts";
import { errorName } from "../protocol/error_name.ts";
import {
  lstatUnlinked,
  type PackProof,
  packProof,
  statsOf,
} from "./_discovery_index.ts";
import { remedy } from "./_pack_status.ts";
import { join, SEP } from "./_host_path.ts";
import { decodeUtf8 } from "./_utf8.ts";
import { type HostFileInfo, hostFs } from "./_host_fs.ts";

const MAX_MANIFEST_BYTES = 1024 * 1024;

const FILES_PER_TURN = 32;

const BOM = "\uFEFF";

/** The files a pack's discovery read so far, for its proof. */
export class ProofCollector {
  paths: string[] = [];
  stats: number[] = [];
  /** False once a file was reached through a link or could not be read. */
  provable = true;
  /** Folders inside the pack found to be real folders, not links. */
  realFolders = new Set<string>();

  add(path: string, stats: number[] | undefined): void {
    if (stats === undefined) {
      this.provable = false;
      return;
    }
    this.paths.push(path);
    this.stats.push(...stats);
  }

  proof(): PackProof | undefined {
    return this.provable ? packProof(this.paths, this.stats) : undefined;
  }
}

/** Why a pack folder is refused, with the code and what to do next. */
export class PackRejection extends Error {
  constructor(
    readonly code: ErrorCode,
    readonly detail: string,
    readonly next: string = remedy(code),
  ) {
    super(detail);
  }
}

/**
 * Thrown when the path of a pack file, checked, opens another file: one was
 * put in its place (or a link, or a link in place of a folder on its path)
 * between the check and the read. The pack is read again.
 */
export class FileReplaced extends Error {}

/**
 * Reads the file at `path` that `checked` describes. The path is opened,
 * which follows links, so the opened file must be the checked one (device
 * and inode): a link put in its place since the check, to a file outside
 * the pack, is never read.
 *
 * @returns The bytes, at most `maxBytes + 1`, and the opened file's status.
 * @throws {FileReplaced} When the path opened another file.
 */
function readChecked(
  path: string,
  checked: HostFileInfo,
  maxBytes: number,
): { bytes: Uint8Array<ArrayBuffer>; info: HostFileInfo } {
  // try/finally, not `using`: Node reads no `using` before version 24, and
  // the Node build of the delivery entry, which the Node versions the build
  // supports load, holds this module.
  const handle = hostFs().openSync(path);
  try {
    const info = handle.statSync();
    if (
      !info.isFile || info.dev !== checked.dev || info.ino !== checked.ino
    ) {
      throw new FileReplaced();
    }
    const bytes = readCapped(
      (into) => handle.readSync(into) ?? 0,
      info.size,
      maxBytes,
    );
    return { bytes, info };
  } finally {
    handle.close();
  }
}

/**
 * Reads an open file to its end through `read` (which fills the array it
 * is given and answers how many bytes it read, 0 at the end), at most
 * `maxBytes + 1` bytes: a file past the cap, even one that grew since
 * `size` was taken from its status, shows as longer than `maxBytes`.
 *
 * @param size The file's size by its status: the first buffer's.
 * @returns The bytes read.
 */
export function readCapped(
  read: (into: Uint8Array) => number,
  size: number,
  maxBytes: number,
): Uint8Array<ArrayBuffer> {
  let buffer = new Uint8Array(Math.min(size, maxBytes) + 1);
  let length = 0;
  for (;;) {
    if (length === buffer.length) {
      // It grew while it was read; past the cap it is refused anyway.
      if (length > maxBytes) break;
      const larger = new Uint8Array(Math.min(length * 2, maxBytes + 1));
      larger.set(buffer);
      buffer = larger;
    }
    const count = read(buffer.subarray(length));
    if (count === 0) break;
    length += count;
  }
  return buffer.subarray(0, length);
}

/**
 * Reads one file of a pack, checked on its real path, with what proves it
 * unchanged later when it was reached through no link.
 */
function readInside(
  packReal: string,
  file: string,
  maxBytes: number,
  collector: ProofCollector,
): Uint8Array<ArrayBuffer> {
  const expected = join(packReal, file);
  // Through real folders of a real pack folder, the path as written is the
  // real path: one lstat a file (and one a folder) proves it, where
  // `realPath` reads every link of the whole path (seven a file here).
  const unlinked = lstatUnlinked(packReal, file, collector.realFolders);
  const real = unlinked === undefined
    ? realInside(packReal, expected, file, collector)
    : expected;
  let bytes: Uint8Array<ArrayBuffer>;
  let info: HostFileInfo;
  try {
    // Not followed: a link put at the real path since is not a file.
    info = unlinked ?? hostFs().lstatSync(real);
    if (!info.isFile) {
      throw new PackRejection(
        "PACK_FILE_MISSING",
        `${operatorText(file)} is not a regular file`,
      );
    }
    if (info.size > maxBytes) {
      throw new PackRejection(
        "PACK_FILE_TOO_LARGE",
        `${
          operatorText(file)
        } is ${info.size} bytes, over the ${maxBytes}-byte cap`,
      );
    }
    // The proof is the opened file's status, taken before its read: a
    // change after it shows as another time or size, or is within the
    // racy window.
    ({ bytes, info } = readChecked(real, info, maxBytes));
  } catch (error) {
    collector.provable = false;
    if (error instanceof PackRejection || error instanceof FileReplaced) {
      throw error;
    }
    throw unreadable(file, error);
  }
  if (bytes.byteLength > maxBytes) {
    collector.provable = false;
    throw new PackRejection(
      "PACK_FILE_TOO_LARGE",
      `${
        operatorText(file)
      } grew over the ${maxBytes}-byte cap while it was read`,
    );
  }
  collector.add(
    file,
    unlinked !== undefined && bytes.byteLength === info.size
      ? statsOf(info)
      : undefined,
  );
  return bytes;
}

/** What to do about a pack file the server may not read: not a manifest fix. */
function unreadableFileRemedy(): string {
  return `let the server read the file: check its permissions, and that ${hostFs().readFlag} covers it`;
}

/**
 * A file that is there but cannot be read. Refused permission is the
 * server's to fix, so it is told so; for anything else (a link loop, a
 * folder), adding the file or leaving it out of the manifest is the fix.
 */
function unreadable(file: string, error: unknown): PackRejection {
  if ((error as { code?: unknown } | null)?.code === "ENAMETOOLONG") {
    return nameTooLong(file);
  }
  const kind = hostFs().errorKind(error);
  const refused = kind === "denied" || kind === "not-capable";
  return new PackRejection(
    "PACK_FILE_MISSING",
    `${operatorText(file)} cannot be read (${errorName(error)})`,
    refused ? unreadableFileRemedy() : undefined,
  );
}

/**
 * A file whose name the file system cannot hold, so no such file can be
 * there: the runtime throws it as a plain `Error`, which said nothing.
 */
function nameTooLong(file: string): PackRejection {
  return new PackRejection(
    "PACK_FILE_MISSING",
    `${
      operatorText(file)
    } cannot be read: its name is too long for the file system (ENAMETOOLONG)`,
    "give the file a shorter name (255 bytes a segment on most file systems), in the pack folder and the manifest",
  );
}

/**
 * The real path of a pack's file reached through a link, which must stay
 * inside the pack folder. Such a file is read but never proved unchanged.
 */
function realInside(
  packReal: string,
  expected: string,
  file: string,
  collector: ProofCollector,
): string {
  collector.provable = false;
  let real: string;
  try {
    real = hostFs().realPathSync(expected);
  } catch (error) {
    if (hostFs().errorKind(error) !== "not-found") {
      throw unreadable(file, error);
    }
    throw new PackRejection(
      "PACK_FILE_MISSING",
      `${operatorText(file)} does not exist`,
    );
  }
  if (!real.startsWith(packReal + SEP)) {
    throw new PackRejection(
      "PACK_FILE_OUTSIDE",
      `${operatorText(file)} resolves outside the pack folder`,
    );
  }
  return real;
}

/**
 * Lets the event loop run. Not `setTimeout(0)`: nested timers are clamped
 * to 4 ms, which the 150 yields of a 10,000-pack restart paid as 600 ms.
 */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function decode(file: string, bytes: Uint8Array): string {
  try {
    return decodeUtf8(bytes);
  } catch {
    throw new PackRejection(
      "PACK_MODULE_SYNTAX",
      `${operatorText(file)} is not valid UTF-8`,
      "save the file as UTF-8",
    );
  }
}

function describeIssues(
  issues: readonly { path: readonly PropertyKey[]; message: string }[],
): string {
  const shown = issues.slice(0, 3).map((issue) => {
    const where = operatorText(issue.path.map(String).join("."));
    const message = operatorText(issue.message);
    return where === "" ? message : `${where}: ${message}`;
  });
  const more = issues.length > 3 ? ` (and ${issues.length - 3} more)` : "";
  return shown.join("; ") + more;
}

/** Whether a parsed manifest's `cordon.exports` has a `__proto__` key. */
function exportsProto(json: unknown): boolean {
  const exports = (json as { cordon?: { exports?: unknown } } | null)?.cordon
    ?.exports;
  return typeof exports === "object" && exports !== null &&
    Object.hasOwn(exports, "__proto__");
}

/** Reads and checks a pack's `pack.json`, through the proof collector. */
export function readManifest(
  packReal: string,
  collector: ProofCollector,
): PackManifest {
  let text: string;
  try {
    text = decode(
      "package.json",
      readInside(packReal, "package.json", MAX_MANIFEST_BYTES, collector),
    );
  } catch (error) {
    if (error instanceof PackRejection && error.code !== "PACK_FILE_OUTSIDE") {
      throw new PackRejection(
        "PACK_MANIFEST_INVALID",
        error.detail.replace("does not exist", "is missing"),
        error.next === unreadableFileRemedy()
          ? error.next
          : "add a package.json whose cordon section declares the pack's modules",
      );
    }
    throw error;
  }
  let json: unknown;
  try {
    // Node and npm read a package.json saved with a byte order mark, as
    // some editors save it; so does discovery.
    json = JSON.parse(text.startsWith(BOM) ? text.slice(1) : text);
  } catch {
    throw new PackRejection(
      "PACK_MANIFEST_INVALID",
      "package.json is not valid JSON",
      "fix the JSON syntax of package.json",
    );
  }
  if (exportsProto(json)) {
    // zod leaves such a key out instead of refusing it, so the pack would
    // lose an export without a word.
    throw new PackRejection(
      "PACK_MANIFEST_INVALID",
      'package.json exports a subpath "__proto__"',
      "export subpaths of the form . or ./name",
    );
  }
  const parsed = parseUntrusted(PackManifestSchema, json);
  if (!parsed.success) {
    throw new PackRejection(
      "PACK_MANIFEST_INVALID",
      `package.json does not match the pack manifest schema: ${
        describeIssues(parsed.error.issues)
      }`,
    );
  }
  return parsed.data;
}

/** Reads a pack's declared files in order; the first failure wins. */
export async function readFiles(
  packReal: string,
  files: readonly string[],
  maxBytes: number,
  collector: ProofCollector,
): Promise<Map<string, string>> {
  const sources = new Map<string, string>();
  for (const [index, file] of files.entries()) {
    if (index > 0 && index % FILES_PER_TURN === 0) await nextTurn();
    sources.set(
      file,
      decode(file, readInside(packReal, file, maxBytes, collector)),
    );
  }
  return sources;
}
