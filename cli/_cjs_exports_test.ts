import assert from "node:assert/strict";
import {
  exportNames,
  isCommonJsEntry,
  withNamedExports,
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
