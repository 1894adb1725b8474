// This module is browser compatible.

import { z } from "./_zod.ts";

/** The one definition of a module id's shape. */
export const MODULE_ID_PATTERN: RegExp = /^[A-Za-z0-9_-]{1,128}$/;

export const moduleId = z.string().regex(
  MODULE_ID_PATTERN,
  "A module id is 1 to 128 characters of A-Z, a-z, 0-9, _ and -",
);

export const digest = z.string().regex(
  /^sha256-[A-Za-z0-9+/]{43}=$/,
  "A digest is sha256-<base64> of 32 bytes",
);

/** The one definition of a pack name's shape (npm's, lowercase). */
export const PACK_NAME_PATTERN: RegExp =
  /^(?:@[a-z0-9][a-z0-9._-]*\/)?[a-z0-9][a-z0-9._-]*$/;
/** npm's longest package name. */
export const MAX_PACK_NAME_LENGTH = 214;

export const packName = z.string().regex(
  PACK_NAME_PATTERN,
  "A pack name is lowercase npm-style: name or @scope/name",
).max(MAX_PACK_NAME_LENGTH);

/** A pack file: `./<path>.js` or `.mjs`, without `.` or `..` segments. */
export const PACK_FILE_PATTERN: RegExp =
  /^\.\/(?!(?:.*\/)?\.\.?(?:\/|$))[^\\\0]+\.(?:js|mjs)$/;
