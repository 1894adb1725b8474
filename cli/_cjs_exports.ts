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
// scheduler's `@license React`) may follow it. Both are found by scans
// that read the text a bounded number of times, not by a regular
// expression: a package's text (a template literal of line breaks, or of
// `/*!` repeated) would make one with `\n*` and `[^]*?` before `$` start
// again at each character and take time quadratic in its length.
const CJS_ENTRY_START = "\nexport default ";
const CJS_ENTRY_END = "();";
const WRAPPER_PREFIX = "require_";
const WORD_CHAR = /[\w$]/;
const LICENSE_OPEN = "/*!";
const COMMENT_CLOSE = "*/";

/** Where an entry's closing licence comments start, and those comments. */
interface LicenseTail {
  /** The first line break before the comments, or where the text ends. */
  index: number;
  /** The comments and the line breaks after them, if any. */
  license: string | undefined;
}

/** The index after the text, line breaks at its end left out. */
function endWithoutLineBreaks(source: string): number {
  let end = source.length;
  while (end > 0 && source[end - 1] === "\n") end--;
  return end;
}

/** The index of the line breaks right before `at`. */
function startOfLineBreaksBefore(source: string, at: number): number {
  let start = at;
  while (start > 0 && source[start - 1] === "\n") start--;
  return start;
}

/**
 * The `/*!` comment starts the closing licence comments may take, first to
 * last: those that leave room for the `*\/` the text ends with (line
 * breaks aside). None when it does not end so.
 */
function* licenseOpenings(source: string, end: number): Generator<number> {
  if (!source.startsWith(COMMENT_CLOSE, end - COMMENT_CLOSE.length)) return;
  const last = end - LICENSE_OPEN.length - COMMENT_CLOSE.length;
  for (
    let at = source.indexOf(LICENSE_OPEN);
    at !== -1 && at <= last;
    at = source.indexOf(LICENSE_OPEN, at + 1)
  ) {
    yield at;
  }
}

/**
 * The text's closing licence comments: from its first `/*!` to the `*\/`
 * it ends with, and the line breaks before and after them.
 */
function licenseTail(source: string): LicenseTail {
  const end = endWithoutLineBreaks(source);
  for (const at of licenseOpenings(source, end)) {
    return {
      index: startOfLineBreaksBefore(source, at),
      license: source.slice(at),
    };
  }
  return { index: end, license: undefined };
}

/** An entry's last statement, `export default require_x();`, and what follows. */
interface CommonJsEntryTail {
  /** Where the statement starts, at the line break before it. */
  index: number;
  /** The wrapper it calls, `require_x`. */
  wrapper: string;
  /** The licence comments after it, and the line breaks after them. */
  license: string | undefined;
}

/** The wrapper called by an `export default require_x();` ending at `end`. */
function wrapperCalledBefore(
  source: string,
  end: number,
): { index: number; wrapper: string } | undefined {
  const callStart = end - CJS_ENTRY_END.length;
  if (callStart < 0 || !source.startsWith(CJS_ENTRY_END, callStart)) {
    return undefined;
  }
  let nameStart = callStart;
  while (nameStart > 0 && WORD_CHAR.test(source[nameStart - 1]!)) nameStart--;
  const wrapper = source.slice(nameStart, callStart);
  const index = nameStart - CJS_ENTRY_START.length;
  if (
    wrapper.length <= WRAPPER_PREFIX.length ||
    !wrapper.startsWith(WRAPPER_PREFIX) || index < 0 ||
    !source.startsWith(CJS_ENTRY_START, index)
  ) {
    return undefined;
  }
  return { index, wrapper };
}

/**
 * The first `export default require_x();` that only line breaks and the
 * closing licence comments follow, as the regular expression
 * `\nexport default (require_[\w$]+)\(\);\n*(\/\*![^]*?\*\/\n*)?$` finds it.
 */
function commonJsEntryTail(source: string): CommonJsEntryTail | undefined {
  const end = endWithoutLineBreaks(source);
  for (const at of licenseOpenings(source, end)) {
    const call = wrapperCalledBefore(
      source,
      startOfLineBreaksBefore(source, at),
    );
    if (call !== undefined) return { ...call, license: source.slice(at) };
  }
  const call = wrapperCalledBefore(source, end);
  return call === undefined ? undefined : { ...call, license: undefined };
}

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
  return commonJsEntryTail(source) !== undefined;
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
  const tail = commonJsEntryTail(source);
  if (tail === undefined) {
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
  return `${source.slice(0, tail.index)}
var __cordon_exports = ${tail.wrapper}();
${reads}export { ${exported.join(", ")} };
${tail.license === undefined ? "" : `\n${tail.license.trimEnd()}\n`}`;
}

// esbuild's copy of a CommonJS module's properties into an entry's
// namespace object for `export * from "./x.cjs"`: an ES module it writes
// cannot list names it learns only when the module runs, so it exports
// none of them.
const REEXPORT =
  /^__reExport\(([\w$]+_exports), __toESM\(require_[\w$]+\(\)(?:, 1)?\)\);$/m;

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
      // `as` is found after one space: `\s+as` would start again at each
      // space of a long run, in time quadratic in its length.
      const name = item.trim().split(/(?<=\s)as\s+/).at(-1)!;
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
  // The bundler's licence comments stay the module's last text.
  const tail = licenseTail(source);
  const license = tail.license === undefined
    ? ""
    : `\n${tail.license.trimEnd()}\n`;
  return `${source.slice(0, tail.index)}\n${text}${license}`;
}
