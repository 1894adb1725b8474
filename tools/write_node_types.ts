/**
 * Writes the type declarations of the Node build: a `.d.ts` beside each
 * entry `deno task build:node` bundled (`dist/node/loader/mod.d.ts` beside
 * `dist/node/loader/mod.js`), and one for each module those declarations
 * reach, at the module's path. A TypeScript project on Node then gets
 * cordon's own types when it imports `@cordon/cordon/loader`, where it
 * stopped at TS7016 (no declaration file).
 *
 * TypeScript's compiler, pinned, emits them from the sources as Deno reads
 * them; each relative `.ts` import becomes `.js`, the name Node resolves.
 * The compiler is locked in `tools/deno.lock`, not `deno.lock`, so `deno
 * task serve` and `deno task run` on a fresh clone do not install it (it
 * reads the environment for its own settings, hence `--allow-env`). For the
 * same reason this module has no doc examples: `deno test --doc` would load
 * the compiler under `deno.lock`. `loader/node_test/node_types.test.mjs`
 * checks what it writes.
 *
 * Usage: `deno run --lock=tools/deno.lock --allow-read=. --allow-write=dist --allow-env tools/write_node_types.ts`
 * (`deno task build:node` runs it, after the bundle).
 *
 * @module
 */

// deno-lint-ignore no-import-prefix -- build only: kept out of deno.json so serve and run do not install it
import ts from "npm:typescript@5.9.3";
import { dirname, posix } from "node:path";
import { fileURLToPath } from "node:url";

// Paths, not URL paths: a checkout's folder may hold a space, `#` or `é`.
const ROOT = fileURLToPath(new URL("../", import.meta.url));
const OUT = `${ROOT}dist/node/`;

/**
 * Where TypeScript sees the checkout. TypeScript reads a backslash in any
 * path as a folder separator, on POSIX too, so a checkout under a folder
 * named `a\b` would be looked for under `a/b`: it is given this path
 * instead, which `compilerHost()` maps to the checkout's own.
 */
const SEEN_ROOT = "/cordon-checkout/";
const SEEN_OUT = `${SEEN_ROOT}dist/node/`;

/**
 * Compiler options that read Deno-style sources (`.ts` imports, bare
 * specifiers found in `node_modules`) and write declarations only. The
 * sources give every export an explicit type, so no type check is needed
 * to write them: `deno check` does that.
 */
const OPTIONS: ts.CompilerOptions = {
  target: ts.ScriptTarget.ESNext,
  module: ts.ModuleKind.ESNext,
  moduleResolution: ts.ModuleResolutionKind.Bundler,
  allowImportingTsExtensions: true,
  declaration: true,
  emitDeclarationOnly: true,
  noCheck: true,
  strict: true,
  types: [],
  rootDir: SEEN_ROOT,
  outDir: SEEN_OUT,
  newLine: ts.NewLineKind.LineFeed,
};

/**
 * `./types.ts` → `./types.js`; other specifiers unchanged. A declaration
 * file of the build imports its neighbours by the `.js` name, which
 * TypeScript resolves to their `.d.ts`, whatever the consumer's settings.
 */
function nodeSpecifier(specifier: string): string {
  return /^\.\.?\//.test(specifier)
    ? specifier.replace(/\.ts$/, ".js")
    : specifier;
}

/** Rewrites the module specifiers of a declaration file with nodeSpecifier(). */
function nodeSpecifiers(
  context: ts.TransformationContext,
): (file: ts.SourceFile | ts.Bundle) => ts.SourceFile | ts.Bundle {
  const { factory } = context;
  const rename = (specifier: ts.Expression): ts.Expression =>
    ts.isStringLiteral(specifier)
      ? factory.createStringLiteral(nodeSpecifier(specifier.text))
      : specifier;
  const visit = (node: ts.Node): ts.Node => {
    if (ts.isImportDeclaration(node)) {
      return factory.updateImportDeclaration(
        node,
        node.modifiers,
        node.importClause,
        rename(node.moduleSpecifier),
        node.attributes,
      );
    }
    if (ts.isExportDeclaration(node) && node.moduleSpecifier) {
      return factory.updateExportDeclaration(
        node,
        node.modifiers,
        node.isTypeOnly,
        node.exportClause,
        rename(node.moduleSpecifier),
        node.attributes,
      );
    }
    if (
      ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteral(node.argument.literal)
    ) {
      const literal = rename(node.argument.literal) as ts.StringLiteral;
      return factory.updateImportTypeNode(
        node,
        factory.updateLiteralTypeNode(node.argument, literal),
        node.attributes,
        node.qualifier,
        node.typeArguments,
        node.isTypeOf,
      );
    }
    return ts.visitEachChild(node, visit, context);
  };
  return (file) => ts.visitEachChild(file as ts.SourceFile, visit, context);
}

/** The path on disk of a path TypeScript sees (SEEN_ROOT). */
function diskPath(seen: string): string {
  return seen.startsWith(SEEN_ROOT)
    ? `${ROOT}${seen.slice(SEEN_ROOT.length)}`
    : seen;
}

/** The path TypeScript sees for a path on disk (SEEN_ROOT). */
function seenPath(disk: string): string {
  return disk.startsWith(ROOT)
    ? `${SEEN_ROOT}${disk.slice(ROOT.length)}`
    : disk;
}

/**
 * A compiler host that shows TypeScript the checkout at SEEN_ROOT and
 * reads it at ROOT. Its own methods are replaced in place, as its
 * `getSourceFile` reads through the host's `readFile`.
 */
function compilerHost(): ts.CompilerHost {
  const host = ts.createCompilerHost(OPTIONS);
  const { fileExists, readFile, directoryExists, getDirectories, realpath } =
    host;
  host.fileExists = (path) => fileExists(diskPath(path));
  host.readFile = (path) => readFile(diskPath(path));
  host.directoryExists = directoryExists &&
    ((path) => directoryExists(diskPath(path)));
  host.getDirectories = getDirectories &&
    ((path) => getDirectories(diskPath(path)));
  host.realpath = realpath && ((path) => seenPath(realpath(diskPath(path))));
  host.getCurrentDirectory = () => SEEN_ROOT;
  return host;
}

/**
 * The declarations of `entries` and of every module they import, each by
 * its path in the build (`loader/mod.d.ts`).
 *
 * @param entries The source files of the build's entries, by the path
 * TypeScript sees (under SEEN_ROOT).
 * @returns Each declaration file's text, by its path in the build.
 * @throws {Error} When TypeScript cannot write them, with its messages.
 */
function emitDeclarations(entries: string[]): Map<string, string> {
  const program = ts.createProgram(entries, OPTIONS, compilerHost());
  const written = new Map<string, string>();
  // emitSkipped is always true here: it counts the JavaScript not written.
  const { diagnostics } = program.emit(
    undefined,
    (path, text) => written.set(path.slice(SEEN_OUT.length), text),
    undefined,
    true,
    { afterDeclarations: [nodeSpecifiers] },
  );
  if (diagnostics.length > 0) {
    throw new Error(
      `Cannot write the Node build's declarations:\n${
        ts.formatDiagnostics(diagnostics, {
          getCanonicalFileName: (name) => name,
          getCurrentDirectory: () => SEEN_ROOT,
          getNewLine: () => "\n",
        })
      }`,
    );
  }
  return written;
}

/**
 * The declaration files a consumer of `entries` reads: the entries' and
 * those their imports reach, and no other (a private module's declarations
 * may name zod or a Deno type). The build bundles its npm dependencies and
 * its package.json names none, so a reached file may import only its
 * neighbours and Node's built-ins, whose types a Node project has from
 * `@types/node`.
 *
 * @param declarations Each declaration file's text, by its path in the build.
 * @param entries The entries' declaration files, by path in the build.
 * @returns The reached files' texts, by path in the build.
 * @throws {Error} When a reached file imports a package, naming both.
 */
function reachedDeclarations(
  declarations: Map<string, string>,
  entries: string[],
): Map<string, string> {
  const reached = new Map<string, string>();
  const pending = [...entries];
  while (pending.length > 0) {
    const path = pending.pop()!;
    if (reached.has(path)) continue;
    const text = declarations.get(path);
    if (text === undefined) {
      throw new Error(`The Node build has no declarations at ${path}`);
    }
    reached.set(path, text);
    for (const { fileName } of ts.preProcessFile(text).importedFiles) {
      if (fileName.startsWith("node:")) continue;
      if (!/^\.\.?\//.test(fileName)) {
        throw new Error(
          `${path} imports "${fileName}", which the Node build does not install: give the export an explicit type of cordon's own`,
        );
      }
      const target = posix.join(posix.dirname(path), fileName);
      pending.push(target.replace(/\.js$/, ".d.ts"));
    }
  }
  return reached;
}

/**
 * The entries of `deno.json`'s `exports` that the bundle built, by their
 * source's path (`loader/mod.ts`), as tools/write_node_package.ts maps them.
 */
async function builtEntries(): Promise<string[]> {
  const { exports } = JSON.parse(
    await Deno.readTextFile(`${ROOT}deno.json`),
  ) as { exports: Record<string, string> };
  const built: string[] = [];
  for (const module of Object.values(exports)) {
    const path = module.replace(/^\.\//, "");
    if (await isFile(`${OUT}${path.replace(/\.ts$/, ".js")}`)) built.push(path);
  }
  return built;
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await Deno.stat(path)).isFile;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

if (import.meta.main) {
  const entries = await builtEntries();
  const declarations = emitDeclarations(
    entries.map((path) => `${SEEN_ROOT}${path}`),
  );
  const reached = reachedDeclarations(
    declarations,
    entries.map((path) => path.replace(/\.ts$/, ".d.ts")),
  );
  for (const [path, text] of reached) {
    await Deno.mkdir(dirname(`${OUT}${path}`), { recursive: true });
    await Deno.writeTextFile(`${OUT}${path}`, text);
  }
}
