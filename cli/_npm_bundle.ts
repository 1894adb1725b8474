/**
 * Bundles an npm package's entry points into ES modules with `deno
 * bundle`'s bundler: one module per entry point, code shared between
 * entries in chunk modules, the package's dependencies inlined. Node
 * built-ins and peer dependencies the tree lacks are left as imports so the
 * checks can name them. The bundler runs in a process that may read the
 * work folder only, so a package cannot have a host file inlined.
 *
 * @module
 */

import { pathToFileURL } from "node:url";
import { CordonError } from "../protocol/cordon_error.ts";
import { withoutBundlerCommentNuls } from "../policy/source_text.ts";
import { withDisabledImportsResolved } from "./_disabled_imports.ts";
import type { EntryPoint } from "./_npm_entries.ts";
import type {
  BundleError,
  BundleOutcome,
  BundleRequest,
} from "./_npm_bundle_process.ts";

/** The bundler's process, which may read the work folder only. */
const BUNDLER_PROCESS = new URL("./_npm_bundle_process.ts", import.meta.url)
  .href;

/** What bundling wrote: every output file, and which one each entry is. */
export interface BundleOutput {
  /** Output files by path (`format.js`, `chunk-ABC.js`), sorted. */
  files: Map<string, Uint8Array<ArrayBuffer>>;
  /** Subpath to its output file. */
  entryFiles: Map<string, string>;
}

// Only `node:` specifiers are marked external. The bundler itself leaves a
// bare built-in name (`crypto`, `fs`) as a `node:` import, after it has
// applied the importing package's `browser` field: bcryptjs maps
// `"crypto": false` there and falls back to it only without Web Crypto.
// Marking the bare names external too would skip that field and refuse
// the package for an import it never uses in a browser.
const EXTERNALS = ["node:*"];

// A sandbox is a browser realm without a DOM, as a Web Worker is: a
// package whose `exports` offer a `worker` build before a `browser` one
// (decode-named-character-reference, which micromark and remark use,
// decodes entities with `document.createElement` in its browser build)
// gets the build that does not need the DOM. The bundler takes extra
// conditions from the environment only.
const BUNDLER_ENV = { NO_COLOR: "1", DENO_CONDITIONS: "worker" };

function dirOf(path: string): string[] {
  return path.split("/").slice(0, -1);
}

/** The folder esbuild keeps output paths relative to: the entries' common one. */
function commonFolder(files: readonly string[]): string[] {
  let common = dirOf(files[0]!);
  for (const file of files.slice(1)) {
    const dir = dirOf(file);
    let i = 0;
    while (i < common.length && i < dir.length && common[i] === dir[i]) i++;
    common = common.slice(0, i);
  }
  return common;
}

/**
 * The name the bundler gives an entry's output file: the entry's path as a
 * file URL's path, percent-encoded (`a#b.js` is written `a%23b.js`, `é.js`
 * `%C3%A9.js`), with `:` and `|` then made `_`. The pack keeps that name:
 * guest code imports an entry by its subpath, never by its file.
 */
function bundlerFileName(path: string): string {
  const url = new URL("file:///");
  // As the runtime turns a path into a file URL: the path setter would
  // leave a `%` as it is, read a backslash as a slash and drop a tab or a
  // line break, so those are encoded first.
  url.pathname = path.replace(
    /[%\\\t\n\r]/g,
    (char) => encodeURIComponent(char),
  );
  return url.pathname.slice(1).replace(/[:|]/g, "_");
}

/**
 * The name of the module the bundler writes for an entry file, relative
 * to the entries' common folder: {@linkcode bundlerFileName}, as `.js`.
 * Two entry files of one such name cannot be bundled in one run.
 */
export function entryModuleName(file: string): string {
  return bundlerFileName(file).replace(/\.(?:mjs|cjs|js)$/, ".js");
}

/**
 * Why the bundler cannot build an entry for its file's name, or
 * `undefined`. It answers "Could not resolve" for a file of a package whose
 * name holds a `*`, given by its path or by a file URL that writes it
 * `%2A` alike (outside `node_modules` that URL works), so such an entry is
 * not handed to it.
 */
export function unbundlableNameReason(entry: EntryPoint): string | undefined {
  if (!entry.file.includes("*")) return undefined;
  return `the file of ${entry.subpath} (./${entry.file}) has a * in its name, by which the bundler cannot find a file of a package`;
}

async function readTree(
  root: string,
  prefix = "",
  out = new Map<string, Uint8Array<ArrayBuffer>>(),
): Promise<Map<string, Uint8Array<ArrayBuffer>>> {
  const names: { name: string; dir: boolean }[] = [];
  for await (const entry of Deno.readDir(`${root}/${prefix}`)) {
    names.push({ name: entry.name, dir: entry.isDirectory });
  }
  names.sort((a, b) => (a.name < b.name ? -1 : 1));
  for (const { name, dir } of names) {
    const path = prefix === "" ? name : `${prefix}/${name}`;
    if (dir) await readTree(root, path, out);
    else {
      const bytes = await Deno.readFile(`${root}/${path}`);
      out.set(path, withoutBareBuiltinImports(withoutBundlerNuls(bytes)));
    }
  }
  return out;
}

// The bundler's own NUL in a comment goes; any other stays, and the
// checks refuse its module.
function withoutBundlerNuls(
  bytes: Uint8Array<ArrayBuffer>,
): Uint8Array<ArrayBuffer> {
  if (!bytes.includes(0)) return bytes;
  const text = new TextDecoder().decode(bytes);
  return new TextEncoder().encode(withoutBundlerCommentNuls(text));
}

// An import of a Node built-in that binds nothing, as the runtime chunk
// of rolldown-built packages opens with (`import "node:module";`, left
// when the `createRequire` it imported for is unused), runs nothing the
// importing module can see in Node, so it goes rather than refusing every
// entry that reaches it. The bundler writes every such import of a
// built-in as one `node:` line, its other imports bind a name and stay.
const BARE_BUILTIN_IMPORT = /^import "node:[\w/]+";\n/gm;

function withoutBareBuiltinImports(
  bytes: Uint8Array<ArrayBuffer>,
): Uint8Array<ArrayBuffer> {
  const text = new TextDecoder().decode(bytes);
  const kept = text.replace(BARE_BUILTIN_IMPORT, "");
  return kept === text ? bytes : new TextEncoder().encode(kept);
}

function readOutcome(stdout: Uint8Array): BundleOutcome | undefined {
  try {
    return JSON.parse(new TextDecoder().decode(stdout));
  } catch {
    return undefined;
  }
}

function firstErrorLine(stderr: Uint8Array): string {
  return new TextDecoder().decode(stderr).split("\n")
    .find((line) => line.startsWith("error"))?.replace(/^error:\s*/, "") ??
    "the bundler failed";
}

// The runtime's words for a read the bundler's process may not make.
const READ_DENIED = /^Requires read access to /;

const READ_OUTSIDE =
  "it reads a file outside the package tree, which the bundler may not read; pack another version, or report it to the package's authors";

// The comment the bundler writes before each file it inlines names it
// relative to the work folder. The runtime checks the reads of the files
// it loads, but the bundler loads a `.txt` file itself, unchecked; such a
// file from outside the work folder is named `../…` (or by its absolute
// path). A package's own text that reads so only refuses that package.
const OUTSIDE_TREE = /^\/\/ (?:\.\.\/|\/)/m;

function namesFileOutsideTree(bytes: Uint8Array): boolean {
  return OUTSIDE_TREE.test(new TextDecoder().decode(bytes));
}

// An error about a file outside the work folder is about one the bundler
// read itself (a JSON import of a file that is not JSON), and its words
// may quote that file: `Unexpected "npm_…" in JSON`.
function aboutFileOutsideTree(error: BundleError): boolean {
  return error.file !== undefined &&
    (error.file.startsWith("../") || error.file.startsWith("/"));
}

/**
 * The bundler's error without host paths: a read outside the work folder
 * names the host file, so it is said in words of the package instead.
 */
function bundlerError(text: string, workDir: string): string {
  if (READ_DENIED.test(text)) return READ_OUTSIDE;
  // The bundler names files by URL, percent-encoded where the temp folder's
  // path holds a space, `#` or a non-ASCII letter.
  const inTree = text.replaceAll(`${pathToFileURL(workDir).href}/`, "")
    .replaceAll(`${workDir}/`, "");
  // A URL left names a file outside the work folder that is not there: one
  // just above it gives the temp folder's path, and a missing file told
  // apart from one the runtime denied would tell a package which host
  // files exist. Both read as the read the runtime denies.
  return inTree.includes("file://") ? READ_OUTSIDE : inTree;
}

/**
 * The folder Deno keeps its caches in, when this process may not write it,
 * with why, else `undefined`. Deno downloads the bundler (esbuild) there on
 * first use, so a bundler that could not start is blamed on it only when
 * it cannot be written: a read-only cache that already holds the bundler
 * works.
 */
async function unwritableDenoDir(): Promise<
  { path: string; why: string } | undefined
> {
  let path: string;
  try {
    const { stdout, success } = await new Deno.Command(Deno.execPath(), {
      args: ["info", "--json"],
      env: BUNDLER_ENV,
      stdout: "piped",
      stderr: "null",
    }).output();
    if (!success) return undefined;
    path = JSON.parse(new TextDecoder().decode(stdout)).denoDir;
    if (typeof path !== "string") return undefined;
  } catch {
    return undefined;
  }
  try {
    await Deno.mkdir(path, { recursive: true });
    await Deno.remove(await Deno.makeTempFile({ dir: path }));
    return undefined;
  } catch (error) {
    // Without the permission to look, this process cannot tell.
    if (error instanceof Deno.errors.NotCapable) return undefined;
    return { path, why: error instanceof Error ? error.name : String(error) };
  }
}

/**
 * Bundles entries of a package laid out under `workDir`.
 *
 * @param workDir The folder holding `node_modules/`.
 * @param packageDir The package's folder inside it, `node_modules/x`.
 * @param entries The entry points.
 * @param external Package names to leave as imports (peer and optional
 * dependencies the tree does not hold).
 * @param options `signal` ends the bundler's process when it aborts.
 * @returns The output files.
 * @throws {CordonError} `PATH_UNUSABLE` when the temp folder's path holds
 * a comma or Deno cannot write the cache folder it downloads the bundler
 * into: the machine's fault, not the package's.
 * @throws {Error} With the bundler's first error, without host paths; the
 * signal's reason once it aborted.
 */
export async function bundleEntries(
  workDir: string,
  packageDir: string,
  entries: readonly EntryPoint[],
  external: readonly string[] = [],
  options: { signal?: AbortSignal } = {},
): Promise<BundleOutput> {
  const { signal } = options;
  signal?.throwIfAborted();
  // A comma would split the permission flag into several paths.
  if (workDir.includes(",")) {
    throw new CordonError(
      "PATH_UNUSABLE",
      "the temp folder's path holds a comma, which a permission flag cannot carry: set TMPDIR to a folder without one",
    );
  }
  const inputs = entries.map((entry) => `${packageDir}/${entry.file}`);
  const outDir = `${workDir}/.bundle`;
  await Deno.remove(outDir, { recursive: true }).catch(() => {});
  const request: BundleRequest = {
    entrypoints: [...new Set(inputs)],
    outputDir: ".bundle",
    external: [
      ...EXTERNALS,
      ...external.flatMap((name) => [name, `${name}/*`]),
    ],
  };
  const command = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--unstable-bundle",
      "--no-config",
      "--no-lock",
      "--node-modules-dir=manual",
      "--no-prompt",
      // The package tree is all the bundler may read: a package cannot
      // have a host file inlined into its pack.
      `--allow-read=${workDir}`,
      `--allow-write=${outDir}`,
      BUNDLER_PROCESS,
      JSON.stringify(request),
    ],
    cwd: workDir,
    env: BUNDLER_ENV,
    stdout: "piped",
    stderr: "piped",
    // An abort kills the process; its output is then no bundler error.
    ...(signal === undefined ? {} : { signal }),
  });
  const { stdout, stderr } = await command.output();
  signal?.throwIfAborted();
  const outcome = readOutcome(stdout);
  if (outcome === undefined) {
    // The bundler did not run at all: see whether the machine is at fault.
    const denoDir = await unwritableDenoDir();
    if (denoDir !== undefined) {
      throw new CordonError(
        "PATH_UNUSABLE",
        `Deno cannot write its cache folder ${denoDir.path}, where it keeps the bundler it downloads on first use (${denoDir.why}): set DENO_DIR to a folder this command may write, or HOME to one whose .cache it may write`,
      );
    }
  }
  if (outcome?.success !== true) {
    if (outcome?.errors.some(aboutFileOutsideTree)) {
      throw new Error(READ_OUTSIDE);
    }
    throw new Error(
      bundlerError(
        outcome?.errors[0]?.text ?? firstErrorLine(stderr),
        workDir,
      ),
    );
  }
  const files = await withDisabledImportsResolved(await readTree(outDir));
  if ([...files.values()].some(namesFileOutsideTree)) {
    throw new Error(READ_OUTSIDE);
  }
  const base = commonFolder(inputs).length;
  const entryFiles = new Map<string, string>();
  for (const [index, entry] of entries.entries()) {
    const out = entryModuleName(
      inputs[index]!.split("/").slice(base).join("/"),
    );
    if (!files.has(out)) {
      throw new Error(`the bundler wrote no module for ${entry.subpath}`);
    }
    entryFiles.set(entry.subpath, out);
  }
  return { files, entryFiles };
}
