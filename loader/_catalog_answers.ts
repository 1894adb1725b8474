// This module is browser compatible.

/**
 * What the loaders check of a catalog's answers before a run uses them. A
 * platform writes its own catalog, so a resolution or a refusal may have
 * any shape: the checks here keep a wrong one from reaching the import
 * policy, where it would read as the guest's fault or let the guest import
 * a pack its declaration does not name.
 *
 * @module
 */

import type { Declaration } from "../protocol/declaration.ts";
import { isThenable } from "../protocol/deadline.ts";
import { ignoreRejection } from "../protocol/hook_calls.ts";

/** An object a catalog answered, before its fields are known. */
type AnswerRecord = Record<string, unknown>;

/** Whether a catalog's answer is an object whose fields may be read. */
function isRecord(value: unknown): value is AnswerRecord {
  return typeof value === "object" && value !== null;
}

/** How to name a value in a message: its type, never its text. */
function kindOf(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return "an array";
  const type = typeof value;
  return `${/^[aeiou]/.test(type) ? "an" : "a"} ${type}`;
}

/** The pack names a declaration requests. */
function declaredNames(declaration: Declaration): Set<string> {
  return new Set(
    declaration.packages.map((request) =>
      typeof request === "string" ? request : request.specifier
    ),
  );
}

/** What is wrong with one status, or `null`. */
function statusFault(status: unknown, packs: AnswerRecord): string | null {
  if (!isRecord(status) || typeof status.name !== "string") {
    return `gives a status that is ${kindOf(status)} with no pack name`;
  }
  const name = JSON.stringify(status.name);
  if (status.status === "ok") {
    return isRecord(packs[status.name]) && Object.hasOwn(packs, status.name)
      ? null
      : `gives pack ${name} the status "ok" but leaves it out of packs`;
  }
  return typeof status.code === "string" && typeof status.message === "string"
    ? null
    : `gives pack ${name} a failing status with no code and message text`;
}

/**
 * Packs whose exports were found among a modules record, by that record.
 * Only frozen records are kept, since their answer cannot change: cordon's
 * catalogs hand out the same frozen records run after run, and a pack of
 * 1,500 exports takes about 0.2 ms to check.
 */
const exportsFound = new WeakMap<object, WeakSet<object>>();

/**
 * Records seen frozen. Freezing cannot be undone, and `Object.isFrozen`
 * walks every property of a large record (about 3 µs at 1,500).
 */
const seenFrozen = new WeakSet<object>();

function isFrozenRecord(value: unknown): value is AnswerRecord {
  if (!isRecord(value)) return false;
  if (seenFrozen.has(value)) return true;
  if (!Object.isFrozen(value)) return false;
  seenFrozen.add(value);
  return true;
}

/** What is wrong with one pack's exports, or `null`. */
function exportsFault(
  quoted: string,
  pack: AnswerRecord & { exports: AnswerRecord },
  modules: AnswerRecord,
): string | null {
  const frozen = isFrozenRecord(modules) && isFrozenRecord(pack) &&
    isFrozenRecord(pack.exports);
  if (frozen && exportsFound.get(modules)?.has(pack.exports)) return null;
  for (const [subpath, id] of Object.entries(pack.exports)) {
    if (typeof id !== "string" || !Object.hasOwn(modules, id)) {
      return `gives pack ${quoted} an export ${
        JSON.stringify(subpath)
      } whose module is not among its modules`;
    }
  }
  if (frozen) {
    const packs = exportsFound.get(modules) ?? new WeakSet();
    exportsFound.set(modules, packs.add(pack.exports));
  }
  return null;
}

/** What is wrong with one resolved pack, or `null`. */
function packFault(
  name: string,
  pack: unknown,
  modules: AnswerRecord,
  declared: ReadonlySet<string>,
): string | null {
  const quoted = JSON.stringify(name);
  // The import policy lets the guest import every pack of the resolution.
  if (!declared.has(name)) {
    return `resolves pack ${quoted}, which the declaration does not name`;
  }
  if (!isRecord(pack) || !isRecord(pack.exports) || !isRecord(pack.files)) {
    return `gives pack ${quoted} no exports and files`;
  }
  return exportsFault(
    quoted,
    pack as AnswerRecord & { exports: AnswerRecord },
    modules,
  );
}

/**
 * What is wrong with a catalog's resolution of a declaration, or `null`
 * when a run may use it: the four fields of the interface, a status of
 * each kind with its fields, every pack with an "ok" status among the
 * packs, no pack the declaration does not name, and every export's module
 * among the modules. Reading a proxy may throw; the caller catches it.
 *
 * @param declaration The checked declaration the catalog resolved.
 * @param resolution What `resolveForExecution` answered.
 * @returns The fault, worded to follow "the catalog's resolution".
 */
export function resolutionFault(
  declaration: Declaration,
  resolution: unknown,
): string | null {
  if (!isRecord(resolution)) return `is ${kindOf(resolution)}`;
  if (isThenable(resolution)) {
    // A method written async: nobody waits for its promise, whose
    // rejection would otherwise end the process.
    ignoreRejection(resolution);
    return "is a promise: resolveForExecution answers at once, and a catalog that must wait does so in prefetch";
  }
  const { statuses, packs, modules, installed } = resolution;
  if (!Array.isArray(statuses)) {
    return `has statuses that are ${kindOf(statuses)}`;
  }
  if (!isRecord(packs)) return `has packs that are ${kindOf(packs)}`;
  if (!isRecord(modules)) return `has modules that are ${kindOf(modules)}`;
  if (!Array.isArray(installed)) {
    return `has installed that is ${kindOf(installed)}`;
  }
  for (const status of statuses) {
    const fault = statusFault(status, packs);
    if (fault !== null) return fault;
  }
  const declared = declaredNames(declaration);
  for (const [name, pack] of Object.entries(packs)) {
    const fault = packFault(name, pack, modules, declared);
    if (fault !== null) return fault;
  }
  return null;
}

/**
 * What is wrong with a catalog's answer to `authorizeDelivery`, or `null`
 * when it is an object whose refusal, if it refuses, has message text.
 *
 * @param answer What `authorizeDelivery` resolved with.
 * @returns The fault, worded to follow "the catalog's delivery answer".
 */
export function deliveryAnswerFault(answer: unknown): string | null {
  if (!isRecord(answer)) return `is ${kindOf(answer)}`;
  if (answer.ok === true) return null;
  return typeof answer.code === "string" && typeof answer.message === "string"
    ? null
    : "refuses with no code and message text";
}
