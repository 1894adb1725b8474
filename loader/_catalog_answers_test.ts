import assert from "node:assert/strict";
import type { Declaration } from "../protocol/declaration.ts";
import { resolutionFault } from "./_catalog_answers.ts";

const declaration: Declaration = { source: "", packages: ["p"] };

/** Frozen resolutions that share one frozen pack, each with its modules. */
function sharingOnePack() {
  const pack = Object.freeze({
    exports: Object.freeze({ ".": "id-a" }),
    files: Object.freeze({ "a.js": "id-a" }),
  });
  return (modules: Record<string, unknown>) =>
    Object.freeze({
      statuses: Object.freeze([{ name: "p", status: "ok" }]),
      packs: Object.freeze({ p: pack }),
      modules: Object.freeze(modules),
      installed: ["p"],
    });
}

Deno.test("resolutionFault() checks a frozen pack's exports again against another modules record", () => {
  const withModules = sharingOnePack();
  assert.equal(resolutionFault(declaration, withModules({ "id-a": {} })), null);
  assert.equal(
    resolutionFault(declaration, withModules({ "id-b": {} })),
    'gives pack "p" an export "." whose module is not among its modules',
  );
});

Deno.test("resolutionFault() checks an unfrozen pack's exports on every call", () => {
  const exports: Record<string, string> = { ".": "id-a" };
  const modules = Object.freeze({ "id-a": {} });
  const resolution = {
    statuses: [{ name: "p", status: "ok" }],
    packs: { p: { exports, files: {} } },
    modules,
    installed: ["p"],
  };
  assert.equal(resolutionFault(declaration, resolution), null);
  exports["./b"] = "id-b";
  assert.equal(
    resolutionFault(declaration, resolution),
    'gives pack "p" an export "./b" whose module is not among its modules',
  );
});
