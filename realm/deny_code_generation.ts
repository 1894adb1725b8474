// This module is browser compatible.

/**
 * Makes code generation from strings unusable in a realm whose engine has
 * no switch for it (QuickJS): `eval` and the `Function`, `AsyncFunction`,
 * `GeneratorFunction` and `AsyncGeneratorFunction` constructors throw an
 * `EvalError` that says what to write instead. A plugin's `node:vm`
 * context runs it too, in front of the context's `codeGeneration` switch,
 * so that a plugin reads the same message on every tier. Run it before the
 * realm's lockdown, which then freezes the replacements with every other
 * intrinsic.
 *
 * @module
 */

import { realmSource } from "./realm_source.ts";

/**
 * Replaces `eval` and the function constructors of the realm it runs in.
 * Self-contained: it captures the intrinsics it uses when it is called.
 *
 * @example
 * ```ts ignore
 * // Inside a fresh realm, before its lockdown:
 * denyCodeGeneration();
 * eval("1"); // throws EvalError
 * ```
 */
export function denyCodeGeneration(): void {
  "use strict";
  const G = globalThis as unknown as Record<string, unknown>;
  const { defineProperty, getPrototypeOf, setPrototypeOf } = Object;
  const EvalErrorCtor = EvalError;

  function refusal(what: string, remedy: string): EvalError {
    return new EvalErrorCtor(
      "Cannot use " + what +
        " in a sandbox: code generation from strings is denied; " + remedy,
    );
  }
  const tamedEval = {
    eval(_code: unknown): never {
      throw refusal("eval", "write the code directly");
    },
  }.eval;
  defineProperty(G, "eval", {
    value: tamedEval,
    writable: true,
    enumerable: false,
    configurable: true,
  });
  function tameConstructor(prototype: { constructor: unknown }, name: string) {
    const original = prototype.constructor as object;
    const tamed = function () {
      throw refusal(
        "the " + name + " constructor",
        "write the function directly",
      );
    };
    defineProperty(tamed, "name", { value: name });
    defineProperty(tamed, "prototype", {
      value: prototype,
      writable: false,
      enumerable: false,
      configurable: false,
    });
    setPrototypeOf(tamed, getPrototypeOf(original));
    // Writable, as the original is: code that gives a function its own
    // `constructor` by assignment (jstat) fails on an inherited read-only
    // one, and the worker and process tiers freeze nothing after this.
    defineProperty(prototype, "constructor", {
      value: tamed,
      writable: true,
      enumerable: false,
      configurable: true,
    });
    return tamed;
  }
  defineProperty(G, "Function", {
    value: tameConstructor(getPrototypeOf(function () {}), "Function"),
    writable: true,
    enumerable: false,
    configurable: true,
  });
  tameConstructor(getPrototypeOf(async function () {}), "AsyncFunction");
  tameConstructor(getPrototypeOf(function* () {}), "GeneratorFunction");
  tameConstructor(
    getPrototypeOf(async function* () {}),
    "AsyncGeneratorFunction",
  );
}

function denialEntry(library: { denyCodeGeneration: () => void }): void {
  library.denyCodeGeneration();
}

/**
 * The source text of an expression whose value is a function that runs
 * {@linkcode denyCodeGeneration} in the realm that evaluates it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { DENY_CODE_GENERATION_SOURCE } from "./deny_code_generation.ts";
 *
 * assert.match(DENY_CODE_GENERATION_SOURCE, /denyCodeGeneration/);
 * ```
 */
export const DENY_CODE_GENERATION_SOURCE: string = realmSource(
  denialEntry,
  { denyCodeGeneration },
  null,
);
