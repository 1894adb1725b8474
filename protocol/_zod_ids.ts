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

export const packName = z.string().regex(
  /^(?:@[a-z0-9][a-z0-9._-]*\/)?[a-z0-9][a-z0-9._-]*$/,
  "A pack name is lowercase npm-style: name or @scope/name",
).max(214);
