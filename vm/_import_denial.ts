/**
 * Why a vm plugin's import was refused at link time. A vm plugin may import
 * `cordon:host` only, so every other specifier is denied; the shared
 * classifier of the import policy gives the code (and its message) for
 * denied forms, and bare or relative specifiers, which other tiers may
 * allow, are refused here because a vm plugin is a single module.
 *
 * @module
 */

import {
  classifySpecifier,
  IMPORT_DENIED_ERROR_NAME,
  importAttributesDenial,
} from "../policy/import_specifier.ts";
import type { SandboxError } from "../protocol/sandbox_result.ts";

/**
 * Describes a refused import of a vm plugin.
 *
 * @returns The failure, with an `IMPORT_*` code.
 */
export function deniedImportFailure(
  specifier: string,
  attributes: boolean,
): SandboxError {
  const name = IMPORT_DENIED_ERROR_NAME;
  if (attributes) {
    const denial = importAttributesDenial(specifier);
    return { code: denial.code, name, message: denial.message };
  }
  const found = classifySpecifier(specifier);
  if (found.kind === "denied") {
    return { code: found.code, name, message: found.message };
  }
  const quoted = JSON.stringify(specifier);
  if (found.kind === "relative") {
    return {
      code: "IMPORT_PATH_ESCAPE",
      name,
      message:
        `Cannot import ${quoted} in a vm plugin: a vm plugin is one module without relative imports; put the code in the plugin module`,
    };
  }
  return {
    code: "IMPORT_UNDECLARED",
    name,
    message:
      `Cannot import ${quoted} in a vm plugin: a vm plugin may import "cordon:host" only; ask the host for a capability instead`,
  };
}
