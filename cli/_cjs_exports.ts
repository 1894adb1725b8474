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

// esbuild's copy of a CommonJS module's properties into an entry's
// namespace object for `export * from "./x.cjs"`: an ES module it writes
// cannot list names it learns only when the module runs, so it exports
// none of them.
const REEXPORT =
  /^__reExport\(([\w$]+_exports), __toESM\(require_[\w$]+\(\)(?:, 1)?\)\);$/m;

// The bundler's licence comments, which stay the module's last text.
const LICENSE_TAIL = /\n*(\/\*![^]*?\*\/\n*)?$/;

/** The export name under which a probe of the entry offers its namespace. */
export const REEXPORT_PROBE_NAME = "__cordon_reexports";

/**
 * The namespace object into which an ES module entry copies a CommonJS
 * module's properties for `export * from`, which the bundler leaves
 * unexported.
 *
 * @param source The entry module's text.
 * @returns The object's name, or `undefined` when the entry has no such
 * copy.
 */
export function reExportTarget(source: string): string | undefined {
  const target = REEXPORT.exec(source)?.[1];
  if (target === undefined) return undefined;
  const declared = new RegExp(
    `^var ${target.replaceAll("$", "\\$")} = \\{\\};$`,
    "m",
  );
  return declared.test(source) ? target : undefined;
}

/**
 * The entry with its namespace object exported as
 * {@linkcode REEXPORT_PROBE_NAME}, to read the names it holds once the
 * module ran.
 *
 * @param source The entry module's text.
 * @param target The name from {@linkcode reExportTarget}.
 * @returns The probe's text.
 */
export function withReExportProbe(source: string, target: string): string {
  return appendBeforeLicense(
    source,
    `export { ${target} as ${REEXPORT_PROBE_NAME} };\n`,
  );
}

/**
 * The names the entry's own `export { … }` statements give, which the
 * names it copies for `export *` cannot take again.
 *
 * @param source The entry module's text.
 * @returns The exported names, quoted ones unquoted.
 */
export function statedExportNames(source: string): Set<string> {
  const names = new Set<string>();
  for (const [, list] of source.matchAll(/^export \{([^}]*)\};$/gm)) {
    for (const item of list!.split(",")) {
      const name = item.trim().split(/\s+as\s+/).at(-1)!;
      if (name !== "") names.add(name.replace(/^"(.*)"$/, "$1"));
    }
  }
  return names;
}

/**
 * Rewrites an entry so that it also exports `names` from its namespace
 * object, each the value it had when the module ran, as Node and Deno give
 * the names of a CommonJS module an ES module re-exports with `export *`.
 *
 * @param source The entry module's text.
 * @param target The name from {@linkcode reExportTarget}.
 * @param names Export names from {@linkcode exportNames}, without those of
 * {@linkcode statedExportNames}.
 * @returns The new text, with the bundler's licence comments still last.
 */
export function withReExportedNames(
  source: string,
  target: string,
  names: readonly string[],
): string {
  if (names.length === 0) return source;
  const locals = names.map((_, i) => `__cordon_reexport_${i}`);
  return appendBeforeLicense(
    source,
    `var { ${
      names.map((name, i) => `${name}: ${locals[i]}`).join(", ")
    } } = ${target};\nexport { ${
      names.map((name, i) => `${locals[i]} as ${name}`).join(", ")
    } };\n`,
  );
}

function appendBeforeLicense(source: string, text: string): string {
  const tail = LICENSE_TAIL.exec(source)!;
  const license = tail[1] === undefined ? "" : `\n${tail[1].trimEnd()}\n`;
  return `${source.slice(0, tail.index)}\n${text}${license}`;
}
