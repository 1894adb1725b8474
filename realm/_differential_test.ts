// Helpers of the realm's differential tests, which run the same cases in
// Deno, in node:vm contexts and in QuickJS and compare what they give.

import assert from "node:assert/strict";
import vm from "node:vm";
import { createQuickJSLoader } from "../loader/quickjs_loader.ts";
import { EMPTY_CATALOG } from "../catalog/empty_catalog.ts";
import { realmSource } from "./realm_source.ts";
import { WEB_GLOBALS_STEPS, type WebGlobalsSteps } from "./web_globals.ts";

/** A function's source text: the realms receive cases as source. */
export const functionText = (fn: (...args: never[]) => unknown): string =>
  Function.prototype.toString.call(fn);

/**
 * A fresh `node:vm` context with the realm's Web globals, as plugins get.
 *
 * @param global What the context's global object starts with.
 */
export function webGlobalsVmRealm(
  global: object = {},
): { run(source: string): unknown } {
  function entry(steps: WebGlobalsSteps) {
    steps.installWebGlobals(steps, globalThis);
  }
  const context = vm.createContext(global);
  vm.runInContext(
    realmSource(entry, { ...WEB_GLOBALS_STEPS }, null),
    context,
  )();
  return { run: (source) => vm.runInContext(source, context) };
}

/**
 * Each case where `mine` and Deno's answers differ, beside both. For a case
 * in `classOnly`, whose error message is the engine's own, a thrown error
 * is compared by its class alone.
 */
export function differences<C extends (...args: never[]) => unknown>(
  cases: readonly C[],
  mine: unknown[],
  theirs: unknown[],
  classOnly: ReadonlySet<C>,
): unknown[] {
  assert.equal(mine.length, theirs.length);
  const strip = (answer: unknown) =>
    Array.isArray(answer) && answer[0] === "threw"
      ? answer.slice(0, 2)
      : answer;
  const found: unknown[] = [];
  for (let i = 0; i < mine.length; i++) {
    const loose = classOnly.has(cases[i]!);
    try {
      assert.deepEqual(
        loose ? strip(mine[i]) : mine[i],
        loose ? strip(theirs[i]) : theirs[i],
      );
    } catch {
      found.push({
        case: functionText(cases[i]!),
        realm: mine[i],
        deno: theirs[i],
      });
    }
  }
  return found;
}

/**
 * What a case gives, as data: numbers that JSON cannot tell apart, a Blob's
 * class, size, type, bytes, text and File fields, bytes as a list, a
 * promise's outcome, or a thrown error's class, message and the errors a
 * `SuppressedError` carries. Self-contained: it runs in Deno, in a
 * `node:vm` context and in QuickJS, with or without `Blob`.
 */
export async function observe(make: () => unknown): Promise<unknown> {
  const describe = async (value: unknown): Promise<unknown> => {
    if (typeof value === "number") {
      return Object.is(value, -0) || !Number.isFinite(value)
        ? ["number", Object.is(value, -0) ? "-0" : String(value)]
        : value;
    }
    if (value === undefined || typeof value === "bigint") {
      return [typeof value, String(value)];
    }
    if (typeof value !== "object" || value === null) return value;
    if (typeof Blob === "function" && value instanceof Blob) {
      const bytes = Array.from(await value.bytes());
      const described: unknown[] = [
        Object.prototype.toString.call(value),
        value.size,
        value.type,
        bytes,
        await value.text(),
        Array.from(new Uint8Array(await value.arrayBuffer())),
      ];
      if (value instanceof File) {
        described.push(value.name, value.lastModified);
      }
      return described;
    }
    if (value instanceof Promise) {
      try {
        return ["resolved", await describe(await value)];
      } catch (error) {
        return ["rejected", await describe(error)];
      }
    }
    if (value instanceof Error) {
      const own = value as { error?: unknown; suppressed?: unknown };
      return [
        "threw",
        value.constructor.name,
        value.message,
        ...("error" in own ? [await describe(own.error)] : []),
        ...("suppressed" in own ? [await describe(own.suppressed)] : []),
      ];
    }
    if (value instanceof ArrayBuffer) {
      return ["ArrayBuffer", Array.from(new Uint8Array(value))];
    }
    if (value instanceof Uint8Array) return ["Uint8Array", Array.from(value)];
    if (Array.isArray(value)) {
      const items = [];
      for (const item of value) items.push(await describe(item));
      return items;
    }
    const entries: unknown[] = [Object.prototype.toString.call(value)];
    for (const key of Object.keys(value)) {
      entries.push([
        key,
        await describe((value as Record<string, unknown>)[key]),
      ]);
    }
    return entries;
  };
  try {
    return await describe(make());
  } catch (error) {
    return await describe(error);
  }
}

/** Evaluates an expression as a QuickJS loader's guest; returns its text. */
export async function inQuickJS(source: string): Promise<string> {
  using loader = await createQuickJSLoader({ catalog: EMPTY_CATALOG });
  const result = await loader.run(
    { source: `export default ${source};` },
    { timeoutMs: 60_000 },
  );
  assert.ok(result.ok, JSON.stringify(result).slice(0, 500));
  return result.value as string;
}
