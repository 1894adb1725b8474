/**
 * Test helper: runs code while this process's working folder no longer
 * exists, as when a deploy removes the release folder a host started in.
 *
 * @module
 */

/** Runs `use` with this process's working folder deleted under it. */
export async function inDeletedFolder<T>(use: () => Promise<T>): Promise<T> {
  const home = Deno.cwd();
  const gone = await Deno.makeTempDir();
  Deno.chdir(gone);
  await Deno.remove(gone);
  try {
    return await use();
  } finally {
    Deno.chdir(home);
  }
}
