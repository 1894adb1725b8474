/**
 * Copies a folder tree, for the delivery tests that serve a private copy of
 * the fixture packs.
 *
 * @module
 */

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
