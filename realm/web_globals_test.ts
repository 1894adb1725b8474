import assert from "node:assert/strict";
import vm from "node:vm";
import { realmSource } from "./realm_source.ts";
import { WEB_GLOBALS_STEPS, type WebGlobalsSteps } from "./web_globals.ts";

/**
 * The steps as a minifier leaves them: each named class expression, and
 * each function a guest receives as a global, has another name, while the
 * strings stay as they are. (A function declaration keeps its references:
 * the renamed one is bound to its old name at the top of the body.)
 */
function renamedSteps(): WebGlobalsSteps {
  const renamed: Record<string, (...args: never[]) => unknown> = {};
  for (const [key, step] of Object.entries(WEB_GLOBALS_STEPS)) {
    let text = step.toString().replace(
      /= class ([A-Za-z_$][\w$]*)/g,
      (_: string, name: string) => `= class ${name}Renamed`,
    );
    for (const name of ["atob", "btoa"]) {
      if (!text.includes(`function ${name}(`)) continue;
      text = text
        .replace(`function ${name}(`, `function ${name}Renamed(`)
        .replace(
          '"use strict";',
          `"use strict"; const ${name} = ${name}Renamed;`,
        );
    }
    renamed[key] = (0, eval)(`(${text})`);
  }
  return renamed as unknown as WebGlobalsSteps;
}

function namesAndTags(steps: WebGlobalsSteps): string[] {
  function entry(steps: WebGlobalsSteps): string[] {
    steps.installWebGlobals(steps, globalThis);
    const rows: string[] = [];
    for (const key of Reflect.ownKeys(globalThis)) {
      const value = (globalThis as Record<PropertyKey, unknown>)[key];
      if (typeof key !== "string" || typeof value !== "function") continue;
      const proto = (value as { prototype?: object }).prototype;
      const tag = proto === undefined ? undefined : Object
        .getOwnPropertyDescriptor(proto, Symbol.toStringTag)?.value;
      rows.push(`${key}: ${value.name} ${tag ?? ""}`.trim());
    }
    return rows;
  }
  return [...vm.runInNewContext(realmSource(entry, { ...steps }, null))()];
}

Deno.test("installWebGlobals() gives each global the name and tag of the platform's, also when a minifier renamed the classes and functions", () => {
  const expected = [
    "DOMException: DOMException DOMException",
    "TextEncoder: TextEncoder TextEncoder",
    "TextDecoder: TextDecoder TextDecoder",
    "atob: atob",
    "btoa: btoa",
    "URL: URL URL",
    "URLSearchParams: URLSearchParams URLSearchParams",
    "Blob: Blob Blob",
    "File: File File",
    "Event: Event Event",
    "CustomEvent: CustomEvent CustomEvent",
    "EventTarget: EventTarget EventTarget",
    "AbortController: AbortController AbortController",
    "AbortSignal: AbortSignal AbortSignal",
    "queueMicrotask: queueMicrotask",
    "structuredClone: structuredClone",
  ];
  const installed = (steps: WebGlobalsSteps) =>
    namesAndTags(steps).filter((row) =>
      expected.some((line) => line.split(":")[0] === row.split(":")[0])
    ).sort();
  assert.deepEqual(installed(WEB_GLOBALS_STEPS), expected.toSorted());
  assert.deepEqual(installed(renamedSteps()), expected.toSorted());
});
