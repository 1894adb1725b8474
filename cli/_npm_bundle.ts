/**
 * Bundles an npm package's entry points into ES modules with `deno
 * bundle`: one module per entry point, code shared between entries in
 * chunk modules, the package's dependencies inlined. Node built-ins and
 * peer dependencies the tree lacks are left as imports so the checks can
 * name them.
 *
 * @module
 */

import { withoutBundlerCommentNuls } from "../policy/source_text.ts";
import { withDisabledImportsResolved } from "./_disabled_imports.ts";
import type { EntryPoint } from "./_npm_entries.ts";

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
const EXTERNALS = ["--external=node:*"];

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

/**
 * Bundles entries of a package laid out under `workDir`.
 *
 * @param workDir The folder holding `node_modules/`.
 * @param packageDir The package's folder inside it, `node_modules/x`.
 * @param entries The entry points.
 * @param external Package names to leave as imports (peer and optional
 * dependencies the tree does not hold).
 * @returns The output files.
 * @throws {Error} With the bundler's first error, without host paths.
 */
export async function bundleEntries(
  workDir: string,
  packageDir: string,
  entries: readonly EntryPoint[],
  external: readonly string[] = [],
): Promise<BundleOutput> {
  const inputs = entries.map((entry) => `${packageDir}/${entry.file}`);
  const outDir = `${workDir}/.bundle`;
  await Deno.remove(outDir, { recursive: true }).catch(() => {});
  const command = new Deno.Command(Deno.execPath(), {
    args: [
      "bundle",
      "--quiet",
      "--no-config",
      "--no-lock",
      "--node-modules-dir=manual",
      "--platform=browser",
      "--format=esm",
      "--code-splitting",
      // Scope hoisting renames a class or function whose name another
      // module uses too (`class _Matrix`, `helper2`); code that reads
      // `constructor.name` or `fn.name` needs the name it was written with.
      "--keep-names",
      `--outdir=${outDir}`,
      ...EXTERNALS,
      ...external.flatMap((name) => [
        `--external=${name}`,
        `--external=${name}/*`,
      ]),
      ...new Set(inputs),
    ],
    cwd: workDir,
    env: BUNDLER_ENV,
    stdout: "piped",
    stderr: "piped",
  });
  const { success, stderr } = await command.output();
  if (!success) {
    const text = new TextDecoder().decode(stderr)
      .replaceAll(`file://${workDir}/`, "")
      .replaceAll(`${workDir}/`, "");
    const first = text.split("\n").find((line) => line.startsWith("error")) ??
      "the bundler failed";
    throw new Error(first.replace(/^error:\s*/, ""));
  }
  const files = await withDisabledImportsResolved(await readTree(outDir));
  const base = commonFolder(inputs).length;
  const entryFiles = new Map<string, string>();
  for (const [index, entry] of entries.entries()) {
    const out = inputs[index]!.split("/").slice(base).join("/")
      .replace(/\.(?:mjs|cjs|js)$/, ".js");
    if (!files.has(out)) {
      throw new Error(`the bundler wrote no module for ${entry.subpath}`);
    }
    entryFiles.set(entry.subpath, out);
  }
  return { files, entryFiles };
}
