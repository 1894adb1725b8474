// This module is browser compatible.

import { z } from "./_zod.ts";
import {
  DIGEST_MESSAGE,
  DIGEST_PATTERN,
  MAX_NPM_NAME_LENGTH,
  MAX_PACK_NAME_LENGTH,
  MODULE_ID_MESSAGE,
  MODULE_ID_PATTERN,
  NPM_NAME_MESSAGE,
  NPM_NAME_PATTERN,
  PACK_NAME_MESSAGE,
  PACK_NAME_PATTERN,
  SEMVER_PATTERN,
} from "./_id_rules.ts";

export const moduleId = z.string().regex(MODULE_ID_PATTERN, MODULE_ID_MESSAGE);

export const digest = z.string().regex(DIGEST_PATTERN, DIGEST_MESSAGE);

export const packName = z.string().regex(PACK_NAME_PATTERN, PACK_NAME_MESSAGE)
  .max(MAX_PACK_NAME_LENGTH);

export const npmName = z.string().regex(NPM_NAME_PATTERN, NPM_NAME_MESSAGE)
  .max(MAX_NPM_NAME_LENGTH);

// A listing names the versions pack manifests hold, so it is held to their
// rule: a server that sends other text (a line break, a NUL) is no cordon
// server, and the text would reach apps through summaries().
export const packVersion = z.string().regex(
  SEMVER_PATTERN,
  "A pack version is semver: 1.2.3",
);
