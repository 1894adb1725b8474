// This module is browser compatible.

/**
 * Installs the Web APIs that are pure computation on a realm's global
 * object, for every realm whose engine has none (the loader's QuickJS
 * context, a plugin's `node:vm` context or QuickJS realm): `DOMException`,
 * `TextEncoder`, `TextDecoder`, `atob`, `btoa`, `URL`, `URLSearchParams`,
 * `Blob`, `File` (without `stream()`), `Event`, `CustomEvent`, `EventTarget`,
 * `AbortController`, `AbortSignal` (without `timeout()`), `queueMicrotask`,
 * `crypto` (`getRandomValues`, `randomUUID`) and `structuredClone`. Runs inside a
 * realm, before its lockdown: self-contained, turned into source by
 * `realm/realm_source.ts`.
 *
 * @module
 */

import { createWebBlob } from "./web_blob.ts";
import { createStructuredClone } from "./web_clone.ts";
import { createWebEvents } from "./web_events.ts";
import { createWebRandom } from "./web_random.ts";
import { createWebText, type WebText } from "./web_text.ts";
import { createWebUrl } from "./web_url.ts";

/** The realm functions {@linkcode installWebGlobals} calls, by name. */
export interface WebGlobalsSteps {
  /** `realm/web_text.ts`. */
  createWebText: typeof createWebText;
  /** `realm/web_random.ts`. */
  createWebRandom: typeof createWebRandom;
  /** `realm/web_url.ts`. */
  createWebUrl: typeof createWebUrl;
  /** `realm/web_blob.ts`. */
  createWebBlob: typeof createWebBlob;
  /** `realm/web_events.ts`. */
  createWebEvents: typeof createWebEvents;
  /** `realm/web_clone.ts`. */
  createStructuredClone: typeof createStructuredClone;
  /** {@linkcode installWebGlobals} itself. */
  installWebGlobals: typeof installWebGlobals;
}

/** What the realm's own code keeps of the installed APIs. */
export interface WebGlobals {
  /** The text and base64 functions, for the realm's helpers. */
  text: WebText;
  /** Keys `crypto` with eight 32-bit words from the host's random source. */
  rekey(key: readonly number[]): void;
}

/**
 * Defines the Web globals on `global` as writable, configurable and not
 * enumerable, as a browser does; the realm's lockdown then locks them with
 * every other global. `crypto` draws nothing useful until it is keyed.
 *
 * @param steps The realm's copies of {@linkcode WEB_GLOBALS_STEPS}.
 * @param global The realm's global object.
 * @returns The text functions and the function that keys `crypto`.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import vm from "node:vm";
 * import { realmSource } from "./realm_source.ts";
 * import { WEB_GLOBALS_STEPS, type WebGlobalsSteps } from "./web_globals.ts";
 *
 * function entry(steps: WebGlobalsSteps) {
 *   const web = steps.installWebGlobals(steps, globalThis);
 *   web.rekey([1, 2, 3, 4, 5, 6, 7, 8]);
 *   return [typeof TextEncoder, atob("aGk="), crypto.randomUUID().length];
 * }
 * const source = realmSource(entry, { ...WEB_GLOBALS_STEPS }, null);
 * assert.deepEqual([...vm.runInNewContext(source)()], ["function", "hi", 36]);
 * ```
 */
export function installWebGlobals(
  steps: WebGlobalsSteps,
  global: object,
): WebGlobals {
  const { defineProperty } = Object;
  const { apply } = Reflect;
  const TypeErrorCtor = TypeError;
  const resolved = Promise.resolve();
  const then = Promise.prototype.then;
  const text = steps.createWebText();
  const random = steps.createWebRandom(text.DOMException);
  const url = steps.createWebUrl(text.TextDecoder);
  const blob = steps.createWebBlob(text.TextEncoder, text.TextDecoder);
  const events = steps.createWebEvents(text.DOMException);
  const queueMicrotask = {
    queueMicrotask(callback: () => void): void {
      if (typeof callback !== "function") {
        throw new TypeErrorCtor("expected a function");
      }
      apply(then, resolved, [() => void callback()]);
    },
  }.queueMicrotask;
  const globals: [string, unknown][] = [
    ["DOMException", text.DOMException],
    ["TextEncoder", text.TextEncoder],
    ["TextDecoder", text.TextDecoder],
    ["atob", text.atob],
    ["btoa", text.btoa],
    ["URL", url.URL],
    ["URLSearchParams", url.URLSearchParams],
    ["Blob", blob.Blob],
    ["File", blob.File],
    ["Event", events.Event],
    ["CustomEvent", events.CustomEvent],
    ["EventTarget", events.EventTarget],
    ["AbortController", events.AbortController],
    ["AbortSignal", events.AbortSignal],
    ["queueMicrotask", queueMicrotask],
    ["crypto", random.crypto],
    [
      "structuredClone",
      steps.createStructuredClone(text.DOMException, blob, [
        url.URL.prototype,
        url.URLSearchParams.prototype,
      ]),
    ],
  ];
  for (const [name, value] of globals) {
    defineProperty(global, name, {
      value,
      writable: true,
      enumerable: false,
      configurable: true,
    });
  }
  return { text, rekey: random.rekey };
}

/** The Web globals' realm functions, for a realm's library. */
export const WEB_GLOBALS_STEPS: WebGlobalsSteps = Object.freeze({
  createWebText,
  createWebRandom,
  createWebUrl,
  createWebBlob,
  createWebEvents,
  createStructuredClone,
  installWebGlobals,
});
