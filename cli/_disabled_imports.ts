/**
 * Gives an `import()` of a module the package's `browser` field disables
 * the empty module it stands for, at pack time, so that an entry is not
 * refused for a dynamic import a browser build never makes: flexsearch
 * maps `worker_threads` to `false` and imports it only on its Node path.
 *
 * The bundler makes one module for each disabled name, an empty CommonJS
 * module keyed `"deno:\0deno-browser-disabled:<name>"`, and when the
 * package imports that name with `import()` it writes a module whose only
 * statement is `export default require_x();`. That key can only be the
 * bundler's (a file's key is its path, which cannot start with `deno:\0`),
 * and `__commonJS` is its own helper (it renames a package's binding of
 * that name), so such a module runs nothing but `module.exports = {}`.
 * Each literal `import("./that.js")` becomes `Promise.resolve(ns)`, where
 * `ns` is that module's namespace imported statically after every other
 * import: the same namespace, and the only new code run is the empty
 * module, since every module it imports already runs before. Any other
 * `import()` stays as written, and the checks refuse it.
 *
 * @module
 */

import { parse } from "es-module-lexer/js";
import { initScanner } from "../policy/scan_module.ts";

type Lexed = ReturnType<typeof parse>;
type Files = Map<string, Uint8Array<ArrayBuffer>>;
type StaticImport = Extract<
  Lexed[0][number],
  { type: "static" | "reexport-star" }
>;

/** Import declarations and `export * from` requests. */
function staticImports(lexed: Lexed): StaticImport[] {
  return lexed[0].filter((entry): entry is StaticImport =>
    entry.type === "static" || entry.type === "reexport-star"
  );
}

// The bundler's empty module for a disabled name, as it writes it.
const DISABLED_STUB =
  /^var (require_[\w$]+) = __commonJS\(\{\n {2}"deno:\\0deno-browser-disabled:[^"\\\n]*"\(exports, module\) \{\n {4}module\.exports = \{\};\n {2}\}\n\}\);$/gm;

// The comment line the bundler writes before it, its NUL already removed.
const DISABLED_COMMENT = /^\/\/ deno:deno-browser-disabled:[^\n]*$/gm;

const DEFAULT_OF_REQUIRE = /^export default (require_[\w$]+)\(\);$/;

const ONE_NAMED_IMPORT = /^import\s*\{\s*([\w$]+)\s*\}\s*from\s*"[^"]*";?$/;

interface Module {
  text: string;
  lexed: Lexed;
  /** Relative static imports, as output paths. */
  imports: string[];
}

/** `./chunk.js` from `a/b.js` to the output path `a/chunk.js`. */
function resolveOutput(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith("./") && !specifier.startsWith("../")) {
    return undefined;
  }
  const url = new URL(specifier, `file:///out/${from}`);
  return url.pathname.startsWith("/out/")
    ? decodeURIComponent(url.pathname.slice("/out/".length))
    : undefined;
}

function readModules(files: Files): Map<string, Module> | undefined {
  const modules = new Map<string, Module>();
  const decoder = new TextDecoder();
  for (const [path, bytes] of files) {
    if (!path.endsWith(".js")) continue;
    const text = decoder.decode(bytes);
    let lexed: Lexed;
    try {
      lexed = parse(text);
    } catch {
      // The checks report a module the lexer cannot read.
      return undefined;
    }
    const imports = staticImports(lexed)
      .map((entry) => resolveOutput(path, entry.specifier))
      .filter((target): target is string => target !== undefined);
    modules.set(path, { text, lexed, imports });
  }
  return modules;
}

function stubNames(text: string): Set<string> {
  return new Set([...text.matchAll(DISABLED_STUB)].map((match) => match[1]!));
}

/** Whether `path` exports its own binding `name`, which is a disabled stub. */
function exportsStub(
  modules: Map<string, Module>,
  path: string | undefined,
  name: string,
): boolean {
  const module = path === undefined ? undefined : modules.get(path);
  if (module === undefined || !stubNames(module.text).has(name)) return false;
  return module.lexed[1].some((entry) =>
    entry.type === "direct" && entry.name === name && entry.localName === name
  );
}

/** Whether the module at `path` is the bundler's namespace of a disabled module. */
function isDisabledModule(modules: Map<string, Module>, path: string): boolean {
  const module = modules.get(path)!;
  const { text } = module;
  const statics = staticImports(module.lexed);
  // Nothing but import declarations: no `export * from`, no `import()`.
  if (
    module.lexed[0].length !== statics.length ||
    statics.some((entry) => entry.type !== "static")
  ) return false;
  let body = "";
  let from = 0;
  for (const entry of statics) {
    body += text.slice(from, entry.importStart);
    from = entry.importEnd;
  }
  body += text.slice(from);
  const own = stubNames(body);
  const rest = body.replace(DISABLED_STUB, "").replace(DISABLED_COMMENT, "")
    .replace(/^;$/gm, "").trim();
  const name = DEFAULT_OF_REQUIRE.exec(rest)?.[1];
  if (name === undefined) return false;
  if (own.has(name)) return true;
  return statics.some((entry) => {
    const clause = text.slice(entry.importStart, entry.importEnd);
    return ONE_NAMED_IMPORT.exec(clause)?.[1] === name &&
      exportsStub(modules, resolveOutput(path, entry.specifier), name);
  });
}

/** The modules `path` runs before itself, and itself. */
function staticClosure(
  modules: Map<string, Module>,
  path: string,
): Set<string> {
  const seen = new Set<string>([path]);
  const stack = [path];
  while (stack.length > 0) {
    for (const next of modules.get(stack.pop()!)?.imports ?? []) {
      if (!seen.has(next)) {
        seen.add(next);
        stack.push(next);
      }
    }
  }
  return seen;
}

/**
 * A binding name the module's text does not hold: the shortest of the name
 * followed by underscores, one more than the most that follow it anywhere
 * in the text. Counted in one pass, where trying each length again from
 * the start of the text took time quadratic in a run of underscores.
 */
function freshName(text: string, index: number): string {
  const name = `__disabledModule${index}`;
  let most = -1;
  for (
    let at = text.indexOf(name);
    at !== -1;
    at = text.indexOf(name, at + name.length)
  ) {
    let end = at + name.length;
    while (text[end] === "_") end++;
    most = Math.max(most, end - at - name.length);
  }
  return name + "_".repeat(most + 1);
}

function rewriteImporter(
  modules: Map<string, Module>,
  path: string,
  disabled: ReadonlySet<string>,
): string | undefined {
  const { text, lexed } = modules.get(path)!;
  const runsBefore = staticClosure(modules, path);
  const bindings = new Map<string, string>();
  let out = "";
  let from = 0;
  for (const entry of lexed[0]) {
    if (
      entry.type !== "dynamic" || entry.phase !== null || entry.glob ||
      entry.specifier === undefined || entry.attributesStart !== -1
    ) continue;
    const target = resolveOutput(path, entry.specifier);
    if (target === undefined || !disabled.has(target)) continue;
    const needs = modules.get(target)!.imports;
    if (!needs.every((need) => runsBefore.has(need))) continue;
    let binding = bindings.get(entry.specifier);
    if (binding === undefined) {
      binding = freshName(text, bindings.size);
      bindings.set(entry.specifier, binding);
    }
    out += text.slice(from, entry.importStart) + `Promise.resolve(${binding})`;
    from = entry.importEnd;
  }
  if (bindings.size === 0) return undefined;
  out += text.slice(from);
  if (!out.endsWith("\n")) out += "\n";
  for (const [specifier, binding] of bindings) {
    out += `import * as ${binding} from ${JSON.stringify(specifier)};\n`;
  }
  return out;
}

/**
 * Replaces each literal `import()` of a module the bundler made for a
 * browser-disabled name with a promise of that module's namespace (see the
 * module doc). Other files and other `import()` calls are left as they are.
 *
 * @param files The bundler's output files by path.
 * @returns The files, with the importing modules rewritten.
 */
export async function withDisabledImportsResolved(
  files: Files,
): Promise<Files> {
  await initScanner();
  const modules = readModules(files);
  if (modules === undefined) return files;
  const disabled = new Set(
    [...modules.keys()].filter((path) => isDisabledModule(modules, path)),
  );
  if (disabled.size === 0) return files;
  const out = new Map(files);
  const encoder = new TextEncoder();
  for (const path of modules.keys()) {
    const rewritten = rewriteImporter(modules, path, disabled);
    if (rewritten !== undefined) out.set(path, encoder.encode(rewritten));
  }
  return out;
}
