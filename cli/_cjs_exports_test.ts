import assert from "node:assert/strict";
import {
  exportNames,
  isCommonJsEntry,
  REEXPORT_PROBE_NAME,
  reExportTarget,
  statedExportNames,
  withNamedExports,
  withReExportedNames,
  withReExportProbe,
} from "./_cjs_exports.ts";

Deno.test("isCommonJsEntry() knows the bundler's CommonJS entry by its last statement, also when the wrapper comes from a chunk", () => {
  assert.equal(
    isCommonJsEntry("var require_x = 1;\nexport default require_x();\n"),
    true,
  );
  assert.equal(
    isCommonJsEntry(
      'import { require_sprintf } from "./chunk-A.js";\nexport default require_sprintf();\n',
    ),
    true,
  );
  assert.equal(
    isCommonJsEntry(
      "var require_s = 1;\nexport default require_s();\n/*! Bundled license information:\n\ns/index.js:\n  (** @license S *)\n*/\n",
    ),
    true,
  );
  assert.equal(isCommonJsEntry("var a = 1;\nexport default a;\n"), false);
  assert.equal(
    isCommonJsEntry(
      "var require_s = 1;\nexport default require_s();\nvar b = 2;\n/*! x */\n",
    ),
    false,
  );
  assert.equal(isCommonJsEntry("var a = 1;\nexport { a };\n"), false);
});

Deno.test("exportNames() keeps identifier names once each, sorted, without default and __esModule", () => {
  assert.deepEqual(
    exportNames(["b", "a", "default", "__esModule", "x-y", "", "$1", "b", 3]),
    ["$1", "a", "b"],
  );
});

Deno.test("withNamedExports() exports each name read from module.exports, and the default export stays module.exports", () => {
  const source =
    "var require_m = () => ({ a: 1, if: 2 });\nexport default require_m();\n";
  const rewritten = withNamedExports(source, ["a", "if"]);
  assert.match(
    rewritten,
    /export \{ __cordon_exports as default, __cordon_exports as "module\.exports", __cordon_export_0 as a, __cordon_export_1 as if \};\n$/,
  );
  assert.match(
    withNamedExports(source, []),
    /\nexport \{ __cordon_exports as default, __cordon_exports as "module\.exports" \};\n$/,
  );
  assert.throws(
    () => withNamedExports("export default 1;\n", ["a"]),
    TypeError,
  );
});

Deno.test("withNamedExports() keeps the licence comments the bundler put after the entry's last statement", () => {
  const licence =
    "/*! Bundled license information:\n\ns/index.js:\n  (** @license S *)\n*/";
  const rewritten = withNamedExports(
    `var require_s = () => ({ now: 1 });\nexport default require_s();\n${licence}\n`,
    ["now"],
  );
  assert.match(rewritten, /__cordon_export_0 as now \};\n/);
  assert.ok(rewritten.endsWith(`\n${licence}\n`));
  assert.equal(rewritten.split("@license S").length, 2);
});

const REEXPORTING_ENTRY =
  'var e_exports = {};\n__export(e_exports, {\n  default: () => e_default,\n  own: () => own\n});\nvar import_lib = __toESM(require_lib(), 1);\n__reExport(e_exports, __toESM(require_lib(), 1));\nvar own = 1;\nvar e_default = 7;\nexport {\n  e_default as default,\n  own,\n  own as "a-b"\n};\n/*! Bundled license information: x */\n';

Deno.test("reExportTarget() finds the namespace object the bundler copies an export * of a CommonJS module into, and nothing in other modules", () => {
  assert.equal(reExportTarget(REEXPORTING_ENTRY), "e_exports");
  assert.equal(
    reExportTarget(
      "var e_exports = {};\n__reExport(e_exports, __toESM(require_lib()));\n",
    ),
    "e_exports",
  );
  assert.equal(reExportTarget("var a = 1;\nexport { a };\n"), undefined);
  assert.equal(
    reExportTarget("__reExport(e_exports, __toESM(require_lib(), 1));\n"),
    undefined,
  );
});

Deno.test("statedExportNames() reads the names of the entry's export statements, quoted ones unquoted", () => {
  assert.deepEqual(
    [...statedExportNames(REEXPORTING_ENTRY)].sort(),
    ["a-b", "default", "own"],
  );
});

Deno.test("withReExportProbe() and withReExportedNames() add their export before the licence comments, and no names leave the text as it was", () => {
  const probe = withReExportProbe(REEXPORTING_ENTRY, "e_exports");
  assert.match(
    probe,
    new RegExp(
      `\\nexport \\{ e_exports as ${REEXPORT_PROBE_NAME} \\};\\n\\n/\\*! Bundled license information: x \\*/\\n$`,
    ),
  );
  const named = withReExportedNames(REEXPORTING_ENTRY, "e_exports", [
    "a",
    "if",
  ]);
  assert.match(
    named,
    /\nvar \{ a: __cordon_reexport_0, if: __cordon_reexport_1 \} = e_exports;\nexport \{ __cordon_reexport_0 as a, __cordon_reexport_1 as if \};\n\n\/\*! Bundled license information: x \*\/\n$/,
  );
  assert.equal(
    withReExportedNames(REEXPORTING_ENTRY, "e_exports", []),
    REEXPORTING_ENTRY,
  );
});

Deno.test("the entry rewrites keep a package's long runs of line breaks, licence openings and spaces as they are", () => {
  const breaks = "\n".repeat(50_000);
  const openings = "/*!".repeat(20_000);
  const spaces = " ".repeat(50_000);
  const entry =
    `var require_s = () => ({ t: \`${breaks}x\`, u: "${openings}" });\nexport default require_s();\n`;
  assert.equal(isCommonJsEntry(entry), true);
  assert.equal(isCommonJsEntry(`${entry}var later = \`${breaks}\`;\n`), false);
  const named = withNamedExports(entry, ["t"]);
  assert.ok(named.startsWith(entry.slice(0, entry.lastIndexOf("\nexport"))));
  assert.ok(named.endsWith("__cordon_export_0 as t };\n"));
  const module =
    `var e_exports = {};\nvar t = \`${breaks}\`;\nvar u = "${openings}";\n`;
  assert.equal(
    withReExportProbe(module, "e_exports"),
    `${module.slice(0, -1)}\nexport { e_exports as ${REEXPORT_PROBE_NAME} };\n`,
  );
  assert.deepEqual(
    [...statedExportNames(`export {a${spaces}b, c as d};\n`)],
    [`a${spaces}b`, "d"],
  );
});
