/**
 * Named exports for an entry point the bundler made from a CommonJS
 * module. Node and Deno let `import { sprintf } from "sprintf-js"` name a
 * property of a CommonJS module's `module.exports`; the bundler's ES
 * module has only `export default require_x();`. The packer reads the
 * names from the module's exports in the sandbox and adds them here, read
 * once when the module is evaluated, as Node and Deno do, with the whole of
 * `module.exports` under the name `"module.exports"` too, as Node 23 and
 * Deno give it.
 *
 * @module
 */

// esbuild's last statement for an entry that is a CommonJS module; the
// wrapper it calls may live in a chunk and be imported. The licence
// comments the bundler gathers (`/*! Bundled license information: ... */`,
// scheduler's `@license React`) may follow it.
const CJS_ENTRY_TAIL =
  /\nexport default (require_[\w$]+)\(\);\n*(\/\*![^]*?\*\/\n*)?$/;

// Node names a CommonJS module's whole `module.exports` so too, besides
// `default`, since version 23; Deno does the same.
const WHOLE_EXPORTS_NAME = "module.exports";

// An export name the generated code can write without quoting. Node's
// lexer offers other strings too; no import declaration can name most.
const EXPORT_NAME = /^[A-Za-z_$][\w$]*$/;

/** Names never offered: the default export, and Babel's interop flag. */
const LEFT_OUT: ReadonlySet<string> = new Set(["default", "__esModule"]);

/**
 * Whether a bundled entry is a CommonJS module.
 *
 * @param source The entry module's text.
 * @returns Whether it ends with the bundler's `export default require_x();`.
 */
export function isCommonJsEntry(source: string): boolean {
  return CJS_ENTRY_TAIL.test(source);
}

/**
 * The names a CommonJS entry can export: the given property names that are
 * identifiers, without `default` and `__esModule`, sorted, once each.
 *
 * @param keys The own enumerable property names of `module.exports`.
 * @returns The export names.
 */
export function exportNames(keys: readonly unknown[]): string[] {
  const names = new Set<string>();
  for (const key of keys) {
    if (
      typeof key === "string" && EXPORT_NAME.test(key) && !LEFT_OUT.has(key)
    ) {
      names.add(key);
    }
  }
  return [...names].sort();
}

/**
 * Rewrites a CommonJS entry's last statement so that it also exports
 * `names`, each the value of that property when the module is evaluated.
 *
 * @param source The entry module's text, as {@linkcode isCommonJsEntry}
 * accepts it.
 * @param names Export names from {@linkcode exportNames}.
 * @returns The new text, which also exports the whole `module.exports` as
 * `"module.exports"`, and keeps the bundler's licence comments at its end.
 * @throws {TypeError} When `source` is not a CommonJS entry.
 */
export function withNamedExports(
  source: string,
  names: readonly string[],
): string {
  const match = CJS_ENTRY_TAIL.exec(source);
  if (match === null) {
    throw new TypeError("Cannot add named exports: not a CommonJS entry");
  }
  const locals = names.map((_, i) => `__cordon_export_${i}`);
  const reads = names.length === 0
    ? ""
    : `var { ${
      names.map((name, i) => `${name}: ${locals[i]}`).join(", ")
    } } = __cordon_exports;\n`;
  const exported = [
    "__cordon_exports as default",
    `__cordon_exports as ${JSON.stringify(WHOLE_EXPORTS_NAME)}`,
    ...names.map((name, i) => `${locals[i]} as ${name}`),
  ];
  return `${source.slice(0, match.index)}
var __cordon_exports = ${match[1]}();
${reads}export { ${exported.join(", ")} };
${match[2] === undefined ? "" : `\n${match[2].trimEnd()}\n`}`;
}
