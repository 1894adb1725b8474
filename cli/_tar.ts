/**
 * Reads an npm package tarball (`.tgz`): gunzips it as npm does (see
 * `_gunzip.ts`) and lists its regular files. A path that
 * is absolute, climbs with `..` or holds a backslash is refused, so an
 * archive cannot name a file outside the folder it is unpacked into; so is
 * a path given twice, however spelt, or named in bytes that are not UTF-8,
 * which npm's unpacker reads with U+FFFD and so could write two entries to
 * one file; a path over {@linkcode MAX_PATH_CHARS} characters, an archive that makes
 * over {@linkcode MAX_FOLDERS} folders and more than it holds files, and a
 * header whose checksum fails,
 * which npm's unpacker would skip and so read the archive otherwise. A pax
 * header's `size` is the next entry's and a long name outlasts a pax header
 * after it, as npm reads them; a pax size before another extended header,
 * and a global header's size, which npm versions read differently from
 * each other or from the packer, are refused.
 *
 * @module
 */

import { addFoldersOf } from "../protocol/replace_file.ts";
import { operatorQuote } from "../protocol/operator_text.ts";
import { gunzipMembers } from "./_gunzip.ts";

export { UnpackedTooLarge } from "./_gunzip.ts";

/** One regular file of an archive: its path inside the package and bytes. */
export interface TarFile {
  /** `/`-separated, without the archive's first folder (`package/`). */
  path: string;
  bytes: Uint8Array<ArrayBuffer>;
}

const BLOCK = 512;

/**
 * The longest path a package's archive may name, in characters. The
 * longest measured, in next 16.5.0, has 122; Linux takes at most 4,096
 * bytes for a whole path. Each path's folders are checked and made one by
 * one, so a tiny archive naming a path of millions of folders kept the
 * packer busy for hours.
 */
export const MAX_PATH_CHARS = 1024;

/**
 * How many folders one package's archive may make, whatever its files:
 * more only when it holds more files, one folder for each. Each folder is
 * made on the disk when the tree is laid out, and a tiny archive could make
 * millions; a file costs as much to write and at least a 512-byte header of
 * the bounded unpacked size, so one folder a file at most doubles that work.
 * Real archives make fewer folders than files: @stdlib/stats 0.4.1 makes
 * 10,080 for its 14,598 files (@stdlib/math, /array, /utils and the other
 * @stdlib packages tried depend on it), next 16.5.0 694 for 9,220 and
 * @fluentui/react-icons 2.0.344 36 for 47,238.
 */
export const MAX_FOLDERS = 10_000;
const latin1 = new TextDecoder("latin1");
const utf8 = new TextDecoder();
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/** What an archive unpacks to. */
export interface UnpackedTarball {
  /** Its regular files, in archive order. */
  files: TarFile[];
  /** The size of the tar stream it unpacks to, headers included. */
  unpackedBytes: number;
}

function text(block: Uint8Array, start: number, length: number): string {
  return utf8.decode(field(block, start, length));
}

/** A header field's bytes up to its first zero byte. */
function field(block: Uint8Array, start: number, length: number): Uint8Array {
  const bytes = block.subarray(start, start + length);
  const end = bytes.indexOf(0);
  return end === -1 ? bytes : bytes.subarray(0, end);
}

/**
 * An entry's name as read, and whether its bytes were UTF-8. npm's
 * unpacker reads a name with U+FFFD in place of bytes that are not, so
 * two names that differ only there would be one file to it.
 */
interface EntryName {
  text: string;
  utf8: boolean;
}

function entryName(bytes: Uint8Array): EntryName {
  try {
    return { text: strictUtf8.decode(bytes), utf8: true };
  } catch {
    return { text: utf8.decode(bytes), utf8: false };
  }
}

function octal(block: Uint8Array, start: number, length: number): number {
  const digits = latin1.decode(block.subarray(start, start + length))
    .replace(/[\0 ]+$/, "").trim();
  if (!/^[0-7]*$/.test(digits)) throw new Error("a header's size is not octal");
  return digits === "" ? 0 : parseInt(digits, 8);
}

/** What a pax extended header says of the entry after it. */
interface PaxRecords {
  path?: EntryName;
  /** A link's target, from a pax header or a long link name (`K`). */
  linkpath?: string;
  /** Its data's length, which a header's own size field may be too short for. */
  size?: number;
}

/** Reads the `path` and `size` records of a pax extended header. */
function paxRecords(data: Uint8Array): PaxRecords {
  // A record's length counts bytes, so records are cut from the bytes and
  // only then decoded: a name in UTF-8 has more bytes than characters.
  const records: PaxRecords = {};
  let offset = 0;
  while (offset < data.length) {
    const space = data.indexOf(0x20, offset);
    const length = Number(utf8.decode(data.subarray(offset, space)));
    if (
      space <= offset || !Number.isSafeInteger(length) || length <= 0 ||
      offset + length > data.length
    ) {
      break;
    }
    const bytes = data.subarray(space + 1, offset + length - 1);
    const record = utf8.decode(bytes);
    if (record.startsWith("path=")) records.path = entryName(bytes.subarray(5));
    if (record.startsWith("linkpath=")) records.linkpath = record.slice(9);
    if (record.startsWith("size=")) records.size = paxSize(record.slice(5));
    offset += length;
  }
  return records;
}

function paxSize(digits: string): number {
  if (!/^[0-9]{1,15}$/.test(digits)) {
    throw new Error("a pax header's size is not a number");
  }
  return Number(digits);
}

/**
 * Whether a header's checksum holds: the sum of its bytes with the
 * checksum field read as spaces, unsigned as POSIX has it or signed as
 * some old tars wrote it. npm's unpacker skips a header that fails it and
 * reads the next block as a header, so an archive whose header fails
 * would be one set of files to npm and another to the packer.
 */
function checksumHolds(header: Uint8Array): boolean {
  let expected: number;
  try {
    expected = octal(header, 148, 8);
  } catch {
    return false; // a field that is no number holds no sum
  }
  let unsigned = 0;
  let signed = 0;
  for (let i = 0; i < BLOCK; i++) {
    const byte = i >= 148 && i < 156 ? 0x20 : header[i]!;
    unsigned += byte;
    signed += byte > 127 ? byte - 256 : byte;
  }
  return expected === unsigned || expected === signed;
}

function packagePath(raw: string): string | null {
  if (raw.length > MAX_PATH_CHARS) {
    throw new Error(
      `it names a path of over ${MAX_PATH_CHARS} characters, longer than any package's: ${
        operatorQuote(raw, 80)
      }`,
    );
  }
  const parts = raw.split("/").filter((part) => part !== "" && part !== ".");
  parts.shift(); // the archive's first folder, `package/` by convention
  if (parts.length === 0) return null;
  if (
    raw.startsWith("/") || raw.includes("\\") || raw.includes("\0") ||
    parts.some((part) => part === "..")
  ) {
    throw new Error(
      `it names a file outside the package: ${operatorQuote(raw)}`,
    );
  }
  return parts.join("/");
}

/**
 * The folders that the paths of `fileCount` files make, each once, counted
 * path by path so an archive of too many is refused before they are all
 * listed.
 *
 * @throws {Error} When they make over {@linkcode MAX_FOLDERS} folders and
 * more than one for each file.
 */
function foldersMade(
  paths: Iterable<string>,
  fileCount: number,
): Set<string> {
  const limit = Math.max(MAX_FOLDERS, fileCount);
  const folders = new Set<string>();
  for (const path of paths) {
    addFoldersOf(path, folders);
    if (folders.size > limit) {
      throw new Error(
        `it makes over ${limit} folders for its ${fileCount} files, more than any package's: at most ${MAX_FOLDERS}, or one for each file`,
      );
    }
  }
  return folders;
}

/** Refuses files at a path that another file's path makes a folder. */
function refuseFolderClashes(files: Map<string, TarFile>): void {
  const folders = foldersMade(files.keys(), files.size);
  for (const path of files.keys()) {
    if (folders.has(path)) {
      throw new Error(
        `it names ${operatorQuote(path)} both as a file and as a folder`,
      );
    }
  }
}

/**
 * The headers that describe the entry after them, as npm's unpacker reads
 * them: a pax header (`x`), a global one (`g`), a long name (`L`) and a
 * long link target (`K`).
 */
const EXTENDED_TYPES: ReadonlySet<string> = new Set(["x", "g", "L", "K"]);

/** The entries that are links, which npm reads only with a target. */
const LINK_TYPES: ReadonlySet<string> = new Set(["1", "2"]);

/**
 * The entries a pax header's records apply to, in npm's unpacker: files,
 * links, devices, folders and FIFOs, never another extended header.
 */
const NORMAL_TYPES: ReadonlySet<string> = new Set([
  ..."01234567D",
  "\0",
]);

/**
 * The length of an entry's data: a pending pax `size` for a normal entry,
 * else its header's own field.
 *
 * @throws {Error} When a pax size is followed by a header it does not
 * apply to: npm's unpacker once took it for that header's and now keeps it
 * for the entry after, so its versions read the archive differently.
 */
function entrySize(
  header: Uint8Array,
  type: string,
  pending: PaxRecords,
): number {
  if (pending.size === undefined) return octal(header, 124, 12);
  if (!NORMAL_TYPES.has(type)) {
    throw new Error(
      "a pax header's size is followed by another extended header, which npm versions read differently",
    );
  }
  return pending.size;
}

/**
 * What an extended header adds to those before it, as npm keeps them
 * until the next entry: a pax header's records over the earlier ones, a
 * long name over any path.
 *
 * @throws {Error} When a global pax header sets a size, which npm applies
 * to every later entry whose own pax header sets none.
 */
function extended(
  type: string,
  data: Uint8Array,
  pending: PaxRecords,
): PaxRecords {
  if (type === "L") {
    return { ...pending, path: entryName(field(data, 0, data.length)) };
  }
  if (type === "K") {
    return { ...pending, linkpath: text(data, 0, data.length) };
  }
  const records = paxRecords(data);
  if (type === "x") {
    return {
      path: records.path ?? pending.path,
      linkpath: records.linkpath ?? pending.linkpath,
      size: records.size ?? pending.size,
    };
  }
  if (records.size !== undefined) {
    throw new Error(
      "a global pax header sets a size, which npm would take for every later entry's",
    );
  }
  // npm takes no path from a global header.
  return pending;
}

/**
 * Refuses a header npm's unpacker skips alone for its path or link target:
 * it then reads the header's data as the archive's next headers, which
 * the packer would read as a file's bytes.
 *
 * @param type The header's type flag.
 * @param path Its path, as the extended headers before it leave it.
 * @param linkpath Its link target, likewise.
 */
function refuseSkipped(type: string, path: string, linkpath: string): void {
  const skipped = (why: string) =>
    new Error(
      `${why}, so npm would skip it and read its data as the next headers`,
    );
  if (path === "") throw skipped("a header names no path");
  const isLink = LINK_TYPES.has(type);
  if (isLink && linkpath === "") throw skipped("a link names no target");
  if (!isLink && type !== "x" && type !== "g" && linkpath !== "") {
    throw skipped("a header that is no link names a link target");
  }
}

/** A header's own name: its ustar prefix, if any, and its name field. */
function headerName(header: Uint8Array): EntryName {
  const prefix = latin1.decode(header.subarray(257, 263)).startsWith("ustar")
    ? field(header, 345, 155)
    : new Uint8Array();
  const name = field(header, 0, 100);
  if (prefix.length === 0) return entryName(name);
  const joined = new Uint8Array(prefix.length + 1 + name.length);
  joined.set(prefix);
  joined[prefix.length] = 0x2f; // `/`
  joined.set(name, prefix.length + 1);
  return entryName(joined);
}

/**
 * Refuses an entry whose name is not UTF-8: npm's unpacker would write it
 * under the name read with U+FFFD, where another entry may already be.
 */
function refuseNotUtf8(name: EntryName): void {
  if (name.utf8) return;
  throw new Error(
    `it names an entry ${
      operatorQuote(name.text)
    } that holds bytes that are not UTF-8 (read as U+FFFD), which npm would write under another name; pack another version, or report it to the package's authors`,
  );
}

/**
 * Refuses a second entry at a path the archive already holds, however
 * the two spell it (`./`, `//`, a trailing `/`, another first folder):
 * unpacking keeps only the later, so a file of the package would be lost
 * without a word.
 */
function refuseSecond(
  path: string,
  name: string,
  names: Map<string, string>,
): void {
  const first = names.get(path);
  if (first === undefined) {
    names.set(path, name);
    return;
  }
  throw new Error(
    `it names ${operatorQuote(path)} twice, as ${operatorQuote(first)} and as ${
      operatorQuote(name)
    }, and unpacking would keep only the later; pack another version, or report it to the package's authors`,
  );
}

/**
 * Lists the regular files of a gzipped tar archive. A path given twice,
 * however spelt, and an entry's name that is not UTF-8 are refused, as
 * unpacking would keep one file of two; gzip members one after another are
 * one stream and zero bytes after the last are ignored, as npm reads them.
 *
 * @param gzipped The `.tgz` bytes.
 * @param maxBytes The largest unpacked size accepted.
 * @returns The files, in archive order, and the size of the tar stream.
 * @throws {UnpackedTooLarge} When it unpacks to more than `maxBytes`.
 * @throws {Error} When the archive is not gzip, has bytes after its gzip
 * stream that are not zero, its headers are broken or
 * fail their checksums, a path leaves the package, is given twice or is
 * not UTF-8, or a path is both a
 * file and a folder of another file.
 */
export async function readTarball(
  gzipped: Uint8Array<ArrayBuffer>,
  maxBytes: number,
): Promise<UnpackedTarball> {
  const tar = await gunzipMembers(gzipped, maxBytes);
  const files = new Map<string, TarFile>();
  const names = new Map<string, string>();
  let pending: PaxRecords = {};
  for (let offset = 0; offset + BLOCK <= tar.length;) {
    const header = tar.subarray(offset, offset + BLOCK);
    if (header.every((byte) => byte === 0)) break;
    if (!checksumHolds(header)) {
      throw new Error(
        "a header fails its checksum, so npm would read the archive otherwise",
      );
    }
    const type = String.fromCharCode(header[156]!);
    const normal = NORMAL_TYPES.has(type);
    const name = (normal ? pending.path : undefined) ?? headerName(header);
    if (normal) refuseNotUtf8(name);
    refuseSkipped(
      type,
      name.text,
      (normal ? pending.linkpath : undefined) ?? text(header, 157, 100),
    );
    const size = entrySize(header, type, pending);
    const dataStart = offset + BLOCK;
    if (dataStart + size > tar.length) throw new Error("it is truncated");
    const data = tar.slice(dataStart, dataStart + size);
    offset = dataStart + Math.ceil(size / BLOCK) * BLOCK;
    if (EXTENDED_TYPES.has(type)) {
      pending = extended(type, data, pending);
      continue;
    }
    pending = {};
    if (type !== "0" && type !== "\0" && type !== "7") continue;
    const path = packagePath(name.text);
    if (path === null) continue;
    refuseSecond(path, name.text, names);
    files.set(path, { path, bytes: data });
  }
  refuseFolderClashes(files);
  return { files: [...files.values()], unpackedBytes: tar.length };
}
