import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

/** How {@linkcode runScript} starts its process. */
export interface ScriptRun {
  /** Deno's flags before the script: its permissions, for example. */
  flags?: string[];
  /** Variables set in the process's environment, over this one's. */
  env?: Record<string, string>;
}

const DENO_JSON = fileURLToPath(new URL("../deno.json", import.meta.url));

/**
 * Runs `source` as a module in a `deno run` of its own, with the project's
 * config, `--no-prompt` and `run.flags`, and reads the JSON it prints: how
 * an application embedding cordon would run it.
 *
 * @returns What the script printed, parsed.
 */
export async function runScript(
  source: string,
  run: ScriptRun = {},
): Promise<unknown> {
  const dir = await Deno.makeTempDir();
  try {
    const script = `${dir}/script.js`;
    await Deno.writeTextFile(script, source);
    const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--no-prompt",
        `--config=${DENO_JSON}`,
        ...run.flags ?? [],
        script,
      ],
      ...run.env === undefined ? {} : { env: run.env },
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(code, 0, new TextDecoder().decode(stderr));
    return JSON.parse(new TextDecoder().decode(stdout));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
