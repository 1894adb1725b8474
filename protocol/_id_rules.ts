// This module is browser compatible.

/**
 * The shapes of ids, digests and pack names, and what a value that breaks
 * one is told: the one home of each rule. The zod schemas (`_zod_ids.ts`)
 * and the checks that run without zod (`ids.ts`, and `read_declaration.ts`
 * through `PATTERN_MESSAGES`) read them from here, so a loader that never
 * builds a schema keeps the same rules.
 *
 * @module
 */

/** The one definition of a module id's shape. */
export const MODULE_ID_PATTERN: RegExp = /^[A-Za-z0-9_-]{1,128}$/;
export const MODULE_ID_MESSAGE =
  "A module id is 1 to 128 characters of A-Z, a-z, 0-9, _ and -";

/** A SHA-256 digest in Subresource Integrity form. */
export const DIGEST_PATTERN: RegExp = /^sha256-[A-Za-z0-9+/]{43}=$/;
export const DIGEST_MESSAGE = "A digest is sha256-<base64> of 32 bytes";

/** The one definition of a pack name's shape (npm's, lowercase). */
export const PACK_NAME_PATTERN: RegExp =
  /^(?:@[a-z0-9][a-z0-9._-]*\/)?[a-z0-9][a-z0-9._-]*$/;
/** npm's longest package name. */
export const MAX_PACK_NAME_LENGTH = 214;
export const PACK_NAME_MESSAGE =
  "A pack name is lowercase npm-style: name or @scope/name";

/**
 * Any name npm has published a package under: its rule for old packages.
 * Besides a pack name's, it allows capitals, `~ ' ! ( ) *` and a leading
 * `-` (and `_` after a scope), which npm refuses in new names or a pack
 * name refuses (`JSONStream`), and only URL-safe characters, never a
 * leading `.`, so no name is a path segment `.` or `..`. A bundled
 * dependency keeps such a name; a pack cannot.
 */
export const NPM_NAME_PATTERN: RegExp =
  /^(?:@[a-z0-9][a-z0-9._~-]*\/[A-Za-z0-9_~'!()*-]|[A-Za-z0-9~'!()*-])[A-Za-z0-9._~'!()*-]*$/;
/**
 * The longest npm name read: npm took longer ones before it set 214, and
 * each is laid out as a folder, whose name a file system caps at 255.
 */
export const MAX_NPM_NAME_LENGTH = 255;
export const NPM_NAME_MESSAGE =
  "An npm name is name or @scope/name, of A-Z a-z 0-9 and - . _ ~ ' ! ( ) *, not starting with . or _";

/**
 * A character a path inside a pack may hold: not a backslash, a control
 * character (C0, DEL, C1), a line or paragraph separator, a bidi control
 * or a lone surrogate. No package names a file so; such a name would split
 * or reorder a line it is printed on, and UTF-8, which file systems and
 * module ids read names in, writes every lone surrogate as U+FFFD, so two
 * such paths would name one file under one id. A surrogate pair is one
 * character. Written without `\p{}` classes, as a JSON Schema pattern
 * carries no flags, and so it means the same with the `u` flag or without.
 */
const PATH_CHAR = String
  .raw`(?:[^\\\0-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]|[\ud800-\udbff][\udc00-\udfff])`;

/** A module's file inside its pack, as a listing or a delivery names it. */
export const MODULE_PATH_PATTERN: RegExp = new RegExp(`^\\./${PATH_CHAR}+$`);

/**
 * A pack file: `./<path>.js` or `.mjs`, without empty, `.` or `..`
 * segments. A file system reads `a//b.js` as `a/b.js`, so an empty segment
 * would list one file under two paths and two ids.
 */
export const PACK_FILE_PATTERN: RegExp = new RegExp(
  String.raw`^\./(?!/|.*//|(?:.*/)?\.\.?(?:/|$))${PATH_CHAR}+\.(?:js|mjs)$`,
);

/**
 * An exported subpath: `.` or `./name`, segments of `A-Z a-z 0-9 _ . -`
 * other than `.` and `..`, which the import policy refuses in a bare
 * specifier (`pack/..`), so such an export could never be imported.
 */
export const SUBPATH_PATTERN: RegExp =
  /^\.(?:\/(?!\.\.?(?:\/|$))[A-Za-z0-9_.-]+)*$/;
export const SUBPATH_MESSAGE =
  "An exported subpath is . or ./name, without . or .. segments";

// [0-9], not \d: the pattern is published, and \d is every Unicode digit
// in Python's regular expressions.
/** A pack's or npm package's version: semver, such as `1.2.3`. */
export const SEMVER_PATTERN: RegExp =
  /^[0-9]+\.[0-9]+\.[0-9]+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;

/** The bounds of a pinned pack version's length, in characters. */
export const MIN_PACK_VERSION_LENGTH = 1;
export const MAX_PACK_VERSION_LENGTH = 64;
/**
 * The most packs one declaration may name. A Code node imports a handful;
 * the bound keeps a declaration's check, and the catalog's resolution after
 * it, from reading a list as long as a caller makes it (a sparse array of a
 * billion holes ran the host out of memory).
 */
export const MAX_DECLARED_PACKS = 256;

/**
 * The message of each pattern above, keyed by its source as a JSON Schema
 * writes it: a schema exported from zod keeps the pattern, not the message.
 */
export const PATTERN_MESSAGES: Readonly<Record<string, string>> = Object
  .freeze({
    [MODULE_ID_PATTERN.source]: MODULE_ID_MESSAGE,
    [DIGEST_PATTERN.source]: DIGEST_MESSAGE,
    [PACK_NAME_PATTERN.source]: PACK_NAME_MESSAGE,
    [NPM_NAME_PATTERN.source]: NPM_NAME_MESSAGE,
  });
