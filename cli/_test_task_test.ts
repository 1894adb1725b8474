/**
 * Runs a `deno task` of this project as a user who typed it in a folder
 * below the one of deno.json, for the CLI tests of relative paths.
 *
 * @module
 */

import { fileURLToPath } from "node:url";

/**
 * Runs `deno task <args>` from `dir`, a folder below the one of deno.json,
 * as a user who typed it there; an `INIT_CWD` of this test's own task is
 * not passed on, as Deno keeps one that is set.
 */
export async function taskFrom(dir: string, args: string[]) {
  const env = Deno.env.toObject();
  delete env.INIT_CWD;
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["task", "--quiet", ...args],
    cwd: dir,
    clearEnv: true,
    env: { ...env, NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return {
    code,
    out: decoder.decode(stdout),
    err: decoder.decode(stderr),
  };
}

/** A folder of its own below the one of deno.json. */
export interface Subfolder extends AsyncDisposable {
  /** Its absolute path; disposing removes it. */
  readonly path: string;
}

/** Makes a new folder below the one of deno.json. */
export async function subfolder(): Promise<Subfolder> {
  // `.tmp/` is ignored by git, and is where the test runner writes.
  const parent = fileURLToPath(new URL("../.tmp/", import.meta.url));
  await Deno.mkdir(parent, { recursive: true });
  const path = await Deno.makeTempDir({ dir: parent, prefix: "task_cwd_" });
  return {
    path,
    [Symbol.asyncDispose]: () => Deno.remove(path, { recursive: true }),
  };
}
