/**
 * What the staging tests share: a private copy of the fixture packs, a
 * staged tree of them in a temporary folder, and its files' bytes.
 *
 * @module
 */

import { planStagedTree, writeStagedTree } from "./stage.ts";
import { fileURLToPath, pathToFileURL } from "node:url";

/** The fixture packs shipped with cordon. */
export const FIXTURE_PACKS: string = fileURLToPath(
  new URL("../fixtures/packs/", import.meta.url),
);

/** Copies a folder tree (files and folders only). */
export async function copyTree(from: string, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const entry of Deno.readDir(from)) {
    const source = `${from}/${entry.name}`;
    const target = `${to}/${entry.name}`;
    if (entry.isDirectory) await copyTree(source, target);
    else if (entry.isFile) await Deno.copyFile(source, target);
  }
}

/** Every file of a folder tree, by relative path, in path order. */
export async function readTree(
  root: string,
  prefix = "",
): Promise<Map<string, Uint8Array>> {
  const files = new Map<string, Uint8Array>();
  const names: Deno.DirEntry[] = [];
  for await (const entry of Deno.readDir(`${root}/${prefix}`)) {
    names.push(entry);
  }
  names.sort((a, b) => (a.name < b.name ? -1 : 1));
  for (const entry of names) {
    const path = `${prefix}${entry.name}`;
    if (entry.isDirectory) {
      for (const [inner, bytes] of await readTree(root, `${path}/`)) {
        files.set(inner, bytes);
      }
    } else files.set(path, await Deno.readFile(`${root}/${path}`));
  }
  return files;
}

/** A temporary folder removed on dispose. */
export interface TempDir extends AsyncDisposable {
  /** The folder. */
  path: string;
}

/** Makes a temporary folder that `await using` removes. */
export async function tempDir(): Promise<TempDir> {
  const path = await Deno.makeTempDir({ prefix: "cordon-stage-" });
  return {
    path,
    async [Symbol.asyncDispose]() {
      await Deno.remove(path, { recursive: true });
    },
  };
}

/** Stages a packs folder into `${dir}/${name}` and returns that folder. */
export async function stageInto(
  packsDir: string,
  dir: string,
  name = "staged",
): Promise<string> {
  const out = `${dir}/${name}`;
  await writeStagedTree(await planStagedTree(packsDir), out);
  return out;
}

/** A file URL of a folder's `index.json`. */
export function indexUrlOf(dir: string): URL {
  return pathToFileURL(`${dir}/index.json`);
}
