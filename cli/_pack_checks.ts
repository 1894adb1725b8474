/**
 * The static checks the pack command runs on a bundle, per entry point:
 * what pack discovery would refuse (the project's scanner in pack mode and
 * the pack import rule), imports of Node built-ins, and the code paths
 * that throw in the hardened realm (eval, the Function constructor,
 * require) with the line they are on.
 *
 * @module
 */

import { DEFAULT_MAX_MODULE_BYTES } from "../catalog/disk_catalog.ts";
import { classifySpecifier, resolvePackImport } from "../policy/mod.ts";
import { packScanFailure } from "../policy/scan_module.ts";
import { scanPackSource } from "../policy/scan_pack.ts";

/** What the checks found for one entry point. */
export interface EntryCheck {
  /** The subpath, `.` or `./name`. */
  subpath: string;
  /** Why the entry cannot work in a sandbox; empty when it can. */
  problems: string[];
  /** Code paths that throw in a sandbox if they run; the entry may still work. */
  warnings: string[];
}

/**
 * One finding of a file. One that needs Node gets its entry's remedy when
 * it is reported, as the entries that reach one file may differ in what
 * the package offers instead.
 */
interface Finding {
  text: string;
  needsNode?: boolean;
}

interface FileFindings {
  problems: Finding[];
  warnings: Finding[];
  dependencies: string[];
}

// Conservative text checks: a match in a string is reported too, as a
// warning only, so a false positive costs a line of reading. A match in a
// comment is passed over (see firstMatchInCode).
const WARNINGS: {
  pattern: RegExp;
  what: string | ((match: RegExpExecArray) => string);
  /** A file this matches gets no such note. */
  unless?: RegExp;
  /** Whether the note ends with its entry's remedy for needing Node. */
  needsNode?: boolean;
}[] = [
  {
    // Not a method of one's own named eval (@noble/curves's polynomials):
    // `eval(a, x = 0) {` on one line defines, no call reads so.
    pattern: /(?<![\w$.])eval\s*\((?![^()]*\)[ \t]*\{)/,
    what:
      "calls eval: code generation from strings is denied in the sandbox, so that call throws EvalError",
  },
  {
    pattern: /(?<![\w$.])(?:new\s+)?Function\s*\(/,
    what:
      "calls the Function constructor: code generation from strings is denied in the sandbox, so that call throws EvalError",
  },
  {
    pattern: /(?<![\w$.])__require\s*\(\s*["'`]/,
    what: "calls require: the sandbox has no require, so that call throws",
  },
  {
    // art-template 4 calls require.resolve when imported; the bundler keeps
    // it as a read of its require shim (`__require2` when the package was
    // bundled before), which has no such property.
    pattern:
      /(?<![\w$.])__require\d*\s*\.\s*(resolve|extensions|cache|main)(?![\w$])/,
    what: (match) =>
      `reads require.${match[1]}: the sandbox has no require, so ${
        match[1] === "resolve"
          ? 'a call of it throws TypeError (QuickJS says only "not a function")'
          : "code that uses it throws TypeError"
      }`,
    needsNode: true,
  },
  {
    // hash-wasm embeds its modules as text, tiktoken's bundle holds its
    // .wasm file's bytes: either way nothing can compile them.
    pattern: /(?<![\w$.])WebAssembly\s*\.\s*[A-Za-z]/,
    what:
      "uses WebAssembly, which the sandbox lacks (it has no WebAssembly global): code that compiles or instantiates a WebAssembly module throws ReferenceError; use a build or package written in JavaScript",
  },
  {
    // brotli-wasm: `new URL("brotli_wasm_bg.wasm", import.meta.url)`.
    pattern: /new\s+URL\s*\([^()]*import\.meta\.url/,
    what:
      "finds a file beside it through import.meta.url: a pack holds only its modules and the sandbox cannot fetch that file, so the code that reads it fails",
  },
  {
    // node-html-markdown 2 reads process.env.LOG_PERF in every translate():
    // it imports cleanly and then each call throws. A read behind a
    // `typeof process` check on its own line is left alone; one checked on
    // an earlier line is noted too. A property right after the dot keeps
    // prose ("the token to process.") out. `process$1` is another name.
    pattern:
      /^(?!.*\btypeof\s+process(?![\w$])).*?(?<![\w$.])process(?:\??\.[A-Za-z_$]|\[)/m,
    what:
      "reads the global process, which the sandbox lacks (it has no Node globals): that code throws ReferenceError if it runs",
    // The package's own `process` (the npm polyfill's module) is no global.
    unless: /(?<![\w$.])(?:var|let|const)\s+process(?![\w$])/,
    needsNode: true,
  },
  {
    pattern:
      /(?<![\w$.])RegExp\s*\.\s*(?:\$[1-9_&'`+]|input|lastMatch|lastParen|leftContext|rightContext)(?![\w$])/,
    what:
      "reads a legacy static of RegExp (RegExp.$1, RegExp.lastMatch and the like), which QuickJS lacks: it reads undefined in the sandbox, so that code goes wrong",
  },
];

/** What the sandbox lacks, for each construct the pack scan refuses. */
const SANDBOX_LACKS: Record<string, string> = {
  dynamic: "the sandbox has no import(); it loads static imports only",
  attributes: "the sandbox has no import attributes (JSON or CSS modules)",
  phase: "the sandbox has no source or defer phase imports",
  "type-only": "the sandbox runs JavaScript, not TypeScript",
  require: "the sandbox has no require",
  syntax: "the sandbox loads only modules that parse",
};

/**
 * Why a package the bundle left as an import cannot load: the bundler
 * inlines every dependency but these.
 */
export const LEFT_OUT_PACKAGE =
  "a peer or optional dependency the packer does not install; a pack module may import only files of its own pack, not another pack's";

/**
 * Whether a bare specifier names one of `leftOut`, the peer and optional
 * dependencies the tree lacks, or a file of one. Such a name can also be a
 * Node built-in's (crc 4 declares npm's `buffer` as an optional peer): the
 * package means the npm package, so its reason is {@linkcode LEFT_OUT_PACKAGE},
 * not the policy's words for a built-in.
 */
export function namesLeftOutPackage(
  specifier: string,
  leftOut: readonly string[],
): boolean {
  return leftOut.some((name) =>
    specifier === name || specifier.startsWith(`${name}/`)
  );
}

/**
 * Whether a denial is of a Node built-in. For one (colorette imports
 * `node:tty`) the policy's own words tell a guest to declare a pack, which
 * a package cannot do about its own import: the remedy is the entry's, as
 * for a `require` of one.
 */
function deniesBuiltin(denial: { code: string }): boolean {
  return denial.code === "IMPORT_NODE_BUILTIN" ||
    denial.code === "IMPORT_COMPAT";
}

const utf8 = new TextEncoder();

/** Where a comment starts and where it ends, as offsets into its source. */
type CommentSpan = readonly [start: number, end: number];

/**
 * The comments of a module, or none when it does not parse (its matches are
 * then all reported, as before a parse could tell them apart).
 */
async function commentSpans(source: string): Promise<CommentSpan[]> {
  const { parse } = await import("acorn");
  const spans: CommentSpan[] = [];
  try {
    parse(source, {
      ecmaVersion: "latest",
      sourceType: "module",
      onComment: (_block, _text, start, end) => spans.push([start, end]),
    });
  } catch {
    return [];
  }
  // In the order of the text, which firstMatchInCode walks once.
  return spans.sort((a, b) => a[0] - b[0]);
}

/**
 * The first match of `pattern` whose last character is code, not a
 * comment's: @fluent/bundle's JSDoc shows `process.env.NODE_ENV` in an
 * example, which never runs, and a note on it would hide a read further on.
 * A match ends on what it names (a pattern may begin at its line's start).
 */
function firstMatchInCode(
  pattern: RegExp,
  source: string,
  comments: readonly CommentSpan[],
): RegExpExecArray | null {
  const each = new RegExp(pattern.source, `${pattern.flags}g`);
  // Matches come in the order of the text, so the comments before one are
  // passed once: trying every comment for each match took time quadratic
  // in a module of many comments that each hold a match.
  let next = 0;
  for (
    let match = each.exec(source);
    match !== null;
    match = each.exec(source)
  ) {
    const last = match.index + match[0].length - 1;
    while (next < comments.length && comments[next]![1] <= last) next++;
    const comment = comments[next];
    if (comment === undefined || last < comment[0]) return match;
  }
  return null;
}

function lineAt(source: string, index: number): number {
  let line = 1;
  for (let i = 0; i < index; i++) if (source.charCodeAt(i) === 10) line++;
  return line;
}

async function checkFile(
  path: string,
  source: string,
  context: FileContext,
): Promise<FileFindings> {
  const { has, leftOut } = context;
  const findings: FileFindings = {
    problems: [],
    warnings: [],
    dependencies: [],
  };
  const where = `./${path}`;
  // Discovery refuses a whole pack for one module over the cap; found here,
  // it is blamed on the entries that reach it, and the others are packed.
  const bytes = utf8.encode(source).byteLength;
  if (bytes > DEFAULT_MAX_MODULE_BYTES) {
    findings.problems.push({
      text:
        `${where} is ${bytes} bytes, over the ${DEFAULT_MAX_MODULE_BYTES} bytes a catalog serves by default (PACK_FILE_TOO_LARGE): pack this entry apart with a catalog whose maxModuleBytes is larger, or leave it out`,
    });
  }
  const scan = await scanPackSource(source);
  const refused = packScanFailure(scan, source);
  if (refused !== null) {
    const lacks = scan.readable && scan.refusal !== null
      ? SANDBOX_LACKS[scan.refusal.kind]
      : "the sandbox loads only ES modules";
    findings.problems.push({
      text:
        `${where} ${refused.detail}, which pack discovery refuses (${refused.code}): ${lacks}`,
    });
  }
  if (scan.readable) {
    for (const specifier of scan.specifiers) {
      if (specifier.startsWith("./") || specifier.startsWith("../")) {
        const resolved = resolvePackImport(specifier, where, has);
        if (resolved.ok) findings.dependencies.push(resolved.path.slice(2));
        else {findings.problems.push({
            text: `${where} imports ${
              JSON.stringify(specifier)
            }, which ${resolved.reason}`,
          });}
        continue;
      }
      const kind = classifySpecifier(specifier);
      const imports = `${where} imports ${JSON.stringify(specifier)}`;
      if (kind.kind !== "denied" || namesLeftOutPackage(specifier, leftOut)) {
        findings.problems.push({ text: `${imports}, ${LEFT_OUT_PACKAGE}` });
      } else if (deniesBuiltin(kind)) {
        findings.problems.push({
          text:
            `${imports}, which the sandbox lacks (${kind.code}): Node built-ins are denied`,
          needsNode: true,
        });
      } else {
        findings.problems.push({
          text: `${imports}, which the sandbox lacks: ${kind.message}`,
        });
      }
    }
  }
  let comments: Promise<CommentSpan[]> | undefined;
  for (const { pattern, what, unless, needsNode } of WARNINGS) {
    if (unless?.test(source) || !pattern.test(source)) continue;
    comments ??= commentSpans(source);
    const match = firstMatchInCode(pattern, source, await comments);
    if (match !== null) {
      findings.warnings.push({
        text: `${where} line ${lineAt(source, match.index)} ${
          typeof what === "string" ? what : what(match)
        }`,
        needsNode,
      });
    }
  }
  return findings;
}

/** What a file is checked against besides its own source. */
interface FileContext {
  /** Whether the bundle holds a module, by path with `./`. */
  has: (path: string) => boolean;
  /** The peer and optional dependencies the tree lacks. */
  leftOut: readonly string[];
}

/** How {@linkcode checkBundle} reads the bundle's imports. */
export interface CheckBundleOptions {
  /**
   * The peer and optional dependencies the package tree declares and lacks,
   * which the bundler left as imports.
   *
   * @default {[]}
   */
  leftOut?: readonly string[];
  /**
   * What to do about an entry that needs Node, by its subpath: one clause
   * the findings that need Node end with.
   *
   * @default {() => "it needs Node"}
   */
  nodeRemedy?: (subpath: string) => string;
}

/**
 * Checks every entry point of a bundle, with the modules it reaches.
 *
 * @param files The bundle's modules, by path without `./`.
 * @param entryFiles Subpath to its module.
 * @param options The dependencies the tree lacks.
 * @returns One check per entry, in subpath order.
 */
export async function checkBundle(
  files: ReadonlyMap<string, string>,
  entryFiles: ReadonlyMap<string, string>,
  options: CheckBundleOptions = {},
): Promise<EntryCheck[]> {
  const context: FileContext = {
    has: (path) => files.has(path.slice(2)),
    leftOut: options.leftOut ?? [],
  };
  const nodeRemedy = options.nodeRemedy ?? (() => "it needs Node");
  const findings = new Map<string, FileFindings>();
  for (const [path, source] of files) {
    findings.set(path, await checkFile(path, source, context));
  }
  const checks: EntryCheck[] = [];
  for (const [subpath, file] of entryFiles) {
    const seen = new Set<string>([file]);
    const stack = [file];
    const check: EntryCheck = { subpath, problems: [], warnings: [] };
    const told = ({ text, needsNode }: Finding) =>
      needsNode === true ? `${text}; ${nodeRemedy(subpath)}` : text;
    while (stack.length > 0) {
      const found = findings.get(stack.pop()!)!;
      check.problems.push(...found.problems.map(told));
      check.warnings.push(...found.warnings.map(told));
      for (const next of found.dependencies) {
        if (!seen.has(next)) {
          seen.add(next);
          stack.push(next);
        }
      }
    }
    check.problems = [...new Set(check.problems)].sort();
    check.warnings = [...new Set(check.warnings)].sort();
    checks.push(check);
  }
  return checks;
}
