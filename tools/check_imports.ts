/**
 * Checks the project's import graph, as Deno resolves it:
 *
 * - no import cycles between the project's modules;
 * - no module imports another folder's private (`_name.ts`) module, except
 *   that a folder's `testdata/` scripts are the folder's own (a test runs
 *   them as processes; they are not published), a test may import another
 *   folder's test helper (`_name_test.ts`),
 *   a benchmark may measure a private piece and a tool may generate one's
 *   data (benchmarks and tools are not published), and the browser leg's
 *   entry may read how many engines restored the hardened image
 *   (`loader/_restored_engines.ts`, as the Node build's tests do);
 * - each rule that must have one home is defined once: the module id's
 *   and the pack name's regular expressions;
 * - the loader's modules import nothing of `sandbox/`, `vm/` or `plugin/`
 *   (STYLE.md's fences: the loader runs in browsers, and those tiers start
 *   processes), tests excepted;
 * - the loader's modules load no schema library when they are imported:
 *   zod is not in what they import statically, so a process pays for it
 *   only if it uses a schema (a dynamic `import()` may load it later);
 * - no module, test or script reads a file URL's `.pathname` as a path: it
 *   stays percent-encoded (`my%20projects`), so a checkout whose path holds
 *   a space, `#` or `é` breaks. `fileURLToPath` from `node:url` decodes it
 *   (browser-safe modules hand Deno the URL itself instead). Nor does one
 *   build a file URL by pasting a path after `file://`: the path's space,
 *   `#`, `?` or `%` stays unencoded, so the URL names another file or
 *   none. `pathToFileURL` from `node:url` encodes it.
 *
 * Prints one line per problem and exits 1 when there is any.
 *
 * Usage: `deno run --allow-read --allow-run --allow-write=.tmp tools/check_imports.ts`
 *
 * @module
 */

import { fileURLToPath } from "node:url";

const ROOT = new URL("../", import.meta.url);
const ROOT_PATH = fileURLToPath(ROOT);
/** Folders that are not the project's modules, or that Deno cannot resolve (Playwright's). */
const SKIPPED =
  /^(node_modules|dist|\.tmp|e2e\/node_modules)\/|\.spec\.ts$|^e2e\/playwright\.config\.ts$/;

interface Dependency {
  code?: { specifier?: string };
  type?: { specifier?: string };
  isDynamic?: boolean;
}

interface ModuleInfo {
  specifier: string;
  /** Why Deno cannot load the module, when it cannot. */
  error?: string;
  dependencies?: Dependency[];
}

/**
 * The files matching `patterns` that git tracks or would track.
 *
 * @throws {Error} When git cannot list them (a copy of the checkout
 * without its repository), as an empty list would pass every check.
 */
async function gitFiles(...patterns: string[]): Promise<string[]> {
  const { success, stdout, stderr } = await new Deno.Command("git", {
    args: [
      "ls-files",
      "--cached",
      "--others",
      "--exclude-standard",
      ...patterns,
    ],
    cwd: ROOT_PATH,
    stderr: "piped",
  }).output();
  if (!success) {
    throw new Error(
      `git ls-files cannot list the project's files: ${
        new TextDecoder().decode(stderr).trim()
      }; run the import check in a git checkout of the project`,
    );
  }
  return new TextDecoder().decode(stdout).split("\n")
    .filter((path) => path !== "");
}

/** The project's TypeScript modules, as Deno resolves them. */
async function projectFiles(): Promise<string[]> {
  return (await gitFiles("*.ts")).filter((path) => !SKIPPED.test(path));
}

/** Each module to the project modules it imports, and to what it loads when it is imported. */
interface ImportGraphs {
  /** Project modules to the project modules they import, types included. */
  imports: Map<string, Set<string>>;
  /**
   * Project modules to what evaluating them loads at once: static imports
   * of code, project modules by path and packages by their `npm:` name.
   */
  loads: Map<string, Set<string>>;
}

/** A package's name in a resolved `npm:/name@version/path` specifier. */
function packageOf(specifier: string): string | null {
  const match = /^npm:\/?((?:@[^/]+\/)?[^@/]+)/.exec(specifier);
  return match === null ? null : `npm:${match[1]}`;
}

/** The import graphs of `files`. */
async function importGraph(files: string[]): Promise<ImportGraphs> {
  // Relative to the root: `deno info` reads a `#` in an absolute path as
  // the start of a fragment (Deno 2.9.6), so found no module at all.
  const entry = ".tmp/import_graph_entry.ts";
  await Deno.mkdir(`${ROOT_PATH}.tmp`, { recursive: true });
  await Deno.writeTextFile(
    `${ROOT_PATH}${entry}`,
    files.map((path) => `import type {} from "../${path}";`).join("\n"),
  );
  const { stdout, success, stderr } = await new Deno.Command(Deno.execPath(), {
    // Without the lockfile: the benchmarks' own packages stay out of deno.lock.
    args: ["info", "--json", "--no-lock", entry],
    cwd: ROOT_PATH,
    env: { NO_COLOR: "1" },
  }).output();
  await Deno.remove(`${ROOT_PATH}${entry}`);
  if (!success) throw new Error(new TextDecoder().decode(stderr));
  const { modules } = JSON.parse(new TextDecoder().decode(stdout)) as {
    modules: ModuleInfo[];
  };
  // A module Deno cannot load has no imports: every check would pass.
  const unloaded = modules.find((module) => module.error !== undefined);
  if (unloaded !== undefined) {
    throw new Error(`deno info cannot load a module: ${unloaded.error}`);
  }
  const graph = new Map<string, Set<string>>();
  const loads = new Map<string, Set<string>>();
  for (const module of modules) {
    const from = relative(module.specifier);
    if (from === null || from.startsWith(".tmp/")) continue;
    const to = new Set<string>();
    const loaded = new Set<string>();
    for (const dependency of module.dependencies ?? []) {
      for (const resolved of [dependency.code, dependency.type]) {
        const path = resolved?.specifier && relative(resolved.specifier);
        if (path) to.add(path);
      }
      const code = dependency.code?.specifier;
      if (code === undefined || dependency.isDynamic) continue;
      const target = relative(code) ?? packageOf(code);
      if (target !== null) loaded.add(target);
    }
    graph.set(from, to);
    loads.set(from, loaded);
  }
  return { imports: graph, loads };
}

/** The packages the loader must not load when it is imported. */
const LOADER_FREE_OF: readonly string[] = ["npm:zod"];

/** Loader modules that load a package of {@linkcode LOADER_FREE_OF} at import. */
function heavyLoaderImports(loads: Map<string, Set<string>>): string[] {
  const problems: string[] = [];
  for (const root of loads.keys()) {
    if (!root.startsWith("loader/") || root.endsWith("_test.ts")) continue;
    const via = new Map<string, string>([[root, ""]]);
    const queue = [root];
    for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
      for (const target of loads.get(next) ?? []) {
        if (via.has(target)) continue;
        via.set(target, next);
        queue.push(target);
      }
    }
    for (const banned of LOADER_FREE_OF) {
      if (!via.has(banned)) continue;
      const chain = [banned];
      for (let at = via.get(banned)!; at !== ""; at = via.get(at)!) {
        chain.unshift(at);
      }
      problems.push(
        `${root} loads ${banned} when imported (${
          chain.join(" -> ")
        }); import the schema-free protocol module, or import() the schema where it is needed`,
      );
    }
  }
  return problems;
}

/** A file URL's path inside the project, or `null` for anything else. */
function relative(specifier: string): string | null {
  if (!specifier.startsWith(ROOT.href)) return null;
  return fileURLToPath(specifier).slice(ROOT_PATH.length);
}

function folderOf(path: string): string {
  const at = path.lastIndexOf("/");
  return at === -1 ? "" : path.slice(0, at);
}

/** The folder whose module `path` is: a `testdata/` script is its parent's. */
function ownerOf(path: string): string {
  const folder = folderOf(path);
  return folder.endsWith("/testdata") ? folderOf(folder) : folder;
}

function baseName(path: string): string {
  return path.slice(path.lastIndexOf("/") + 1);
}

/** Folders the loader's modules may not import from. */
const FENCED_FROM_LOADER = ["sandbox/", "vm/", "plugin/"];

/** Imports across the loader's fence, tests excepted. */
function fenceImports(graph: Map<string, Set<string>>): string[] {
  const problems: string[] = [];
  for (const [from, targets] of graph) {
    const test = from.endsWith("_test.ts") || from.includes("/node_test/");
    if (!from.startsWith("loader/") || test) continue;
    for (const to of targets) {
      if (FENCED_FROM_LOADER.some((folder) => to.startsWith(folder))) {
        problems.push(`${from} imports ${to}, across the loader's fence`);
      }
    }
  }
  return problems;
}

/** Imports of another folder's private module. */
function privateImports(graph: Map<string, Set<string>>): string[] {
  const problems: string[] = [];
  for (const [from, targets] of graph) {
    for (const to of targets) {
      if (!baseName(to).startsWith("_") || folderOf(to) === ownerOf(from)) {
        continue;
      }
      const testHelper = from.endsWith("_test.ts") && to.endsWith("_test.ts");
      const testReading = from === "e2e/browser_entry.ts" &&
        to === "loader/_restored_engines.ts";
      if (
        !testHelper && !testReading && !from.startsWith("bench/") &&
        !from.startsWith("tools/")
      ) {
        problems.push(`${from} imports another folder's private ${to}`);
      }
    }
  }
  return problems;
}

/** The import cycles, each as its modules, by Tarjan's strongly connected components. */
function cycles(graph: Map<string, Set<string>>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, counter);
    low.set(node, counter);
    counter++;
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, index.get(next)!));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1 || graph.get(node)?.has(node)) {
      found.push(component.sort());
    }
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

/** Rules with one home, by the text that writes each one out. */
const ONE_HOME_RULES: readonly { name: string; text: string }[] = [
  {
    name: "the module id's regular expression",
    text: "/^[A-Za-z0-9_-]{1,128}$/",
  },
  {
    name: "the pack name's regular expression",
    text: "[a-z0-9][a-z0-9._-]*\\/)?[a-z0-9][a-z0-9._-]*$/",
  },
];

/** Rules written out in more than one module (tests aside). */
async function ruleCopies(files: string[]): Promise<string[]> {
  const places = new Map(ONE_HOME_RULES.map((rule) => [rule, [] as string[]]));
  for (const path of files) {
    // This checker names the rules' text itself.
    if (path.endsWith("_test.ts") || path === "tools/check_imports.ts") {
      continue;
    }
    const text = await Deno.readTextFile(`${ROOT_PATH}${path}`);
    for (const rule of ONE_HOME_RULES) {
      if (text.includes(rule.text)) places.get(rule)!.push(path);
    }
  }
  return [...places].filter(([, found]) => found.length > 1).map((
    [rule, found],
  ) =>
    `${rule.name} is written in ${found.length} places: ${
      found.join(", ")
    }; define it once in protocol/ and import it`
  );
}

/** A module URL's folder or file read as a path, without decoding it. */
const ENCODED_PATH =
  /(?:new URL\([^()]*\bimport\.meta\.url\)|\bimport\.meta\.url\)?)\s*\.pathname\b/;

/** A file URL made by pasting a path after `file://`, without encoding it. */
const PASTED_FILE_URL = /new URL\(\s*(?:`file:\/\/\$\{|(["'])file:\/\/\1\s*\+)/;

/**
 * Scripts and tests that turn their own module URL into an encoded path,
 * or a path into a file URL by pasting it.
 */
async function encodedPaths(): Promise<string[]> {
  const problems: string[] = [];
  // Playwright specs and Node tests too: they run from the checkout as well.
  for (const path of await gitFiles("*.ts", "*.mjs")) {
    const lines = (await Deno.readTextFile(`${ROOT_PATH}${path}`)).split("\n");
    lines.forEach((line, at) => {
      // This checker names the patterns itself.
      if (path === "tools/check_imports.ts") return;
      if (ENCODED_PATH.test(line)) {
        problems.push(
          `${path}:${
            at + 1
          } reads a file URL's .pathname as a path, which stays percent-encoded; use fileURLToPath from node:url`,
        );
      }
      if (PASTED_FILE_URL.test(line)) {
        problems.push(
          `${path}:${
            at + 1
          } makes a file URL by pasting a path after file://, which leaves a space, #, ? or % in it unencoded; use pathToFileURL from node:url`,
        );
      }
    });
  }
  return problems;
}

if (import.meta.main) {
  const files = await projectFiles();
  const { imports: graph, loads } = await importGraph(files);
  const problems = [
    ...cycles(graph).map((cycle) => `import cycle: ${cycle.join(" -> ")}`),
    ...privateImports(graph),
    ...fenceImports(graph),
    ...await ruleCopies(files),
    ...heavyLoaderImports(loads),
    ...await encodedPaths(),
  ];
  for (const problem of problems) console.log(problem);
  console.log(
    `${graph.size} modules checked: ${problems.length} problem${
      problems.length === 1 ? "" : "s"
    }`,
  );
  Deno.exit(problems.length === 0 ? 0 : 1);
}
