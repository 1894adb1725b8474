// This module is browser compatible.

/**
 * What of the host's environment the children cordon starts are handed:
 * named variables only, those the host may read. `TZ` goes to every child,
 * so every tier tells a guest the same local time: the in-thread QuickJS
 * engine takes local time from the host process (its `Date`, so its `TZ`),
 * while a child whose environment is cleared would take the machine's zone.
 * In a browser there is no environment, and every answer is empty.
 *
 * @module
 */

/**
 * The host's values of `names`, for a child's environment: those it has
 * and, on Deno, may read without a prompt.
 *
 * @example
 * ```ts ignore
 * new Deno.Command("deno", { clearEnv: true, env: hostVariables(["TZ"]) });
 * ```
 */
export function hostVariables(
  names: readonly string[],
): Record<string, string> {
  const variables: Record<string, string> = {};
  for (const variable of names) {
    const value = readableVariable(variable);
    if (value !== undefined) variables[variable] = value;
  }
  return variables;
}

/**
 * The runtime flags of every Deno child that runs guest code (a sandbox's
 * child, a vm realm process): no prompt, and no V8 code cache, which would
 * keep compiled code (with its string constants) in Deno's cache folder, a
 * file every child would share and a compromised one would hold open.
 *
 * @example
 * ```ts ignore
 * new Deno.Command(Deno.execPath(), { args: ["run", ...GUEST_CHILD_FLAGS, "main.js"] });
 * ```
 */
export const GUEST_CHILD_FLAGS: readonly string[] = Object.freeze([
  "--no-prompt",
  "--no-code-cache",
]);

/**
 * The flags of such a child that loads nothing but the program it is
 * given: no config file, lockfile, remote or npm module.
 *
 * @example
 * ```ts ignore
 * new Deno.Command(Deno.execPath(), {
 *   args: ["run", ...GUEST_CHILD_FLAGS, ...SELF_CONTAINED_FLAGS, "main.js"],
 * });
 * ```
 */
export const SELF_CONTAINED_FLAGS: readonly string[] = Object.freeze([
  "--no-config",
  "--no-remote",
  "--no-npm",
  "--no-lock",
]);

/** What of the Deno namespace reading a variable needs. */
interface DenoEnvironment {
  permissions: {
    querySync(descriptor: { name: "env"; variable: string }): {
      state: string;
    };
  };
  env: { get(variable: string): string | undefined };
}

// Read through the runtime's own global rather than an import of
// node:process, so the browser bundle of the loader can include this module.
function readableVariable(variable: string): string | undefined {
  const { Deno: deno, process } = globalThis as {
    Deno?: DenoEnvironment;
    process?: { env: Record<string, string | undefined> };
  };
  if (deno === undefined) return process?.env[variable];
  const { state } = deno.permissions.querySync({ name: "env", variable });
  return state === "granted" ? deno.env.get(variable) : undefined;
}

/**
 * The host process's `TZ` as an environment for a child, or `{}` when it
 * has none (the child then takes the machine's zone, as the host does) or,
 * on Deno, may not read it without a prompt.
 *
 * @example
 * ```ts ignore
 * new Deno.Command("deno", { clearEnv: true, env: { ...hostTimeZone() } });
 * ```
 */
export function hostTimeZone(): { TZ?: string } {
  return hostVariables(["TZ"]);
}

/**
 * The environment of a Deno child that loads cordon's own modules (a
 * QuickJS runner, a realm process): the host's `TZ` and the variables that
 * tell Deno where the host's module cache is (`DENO_DIR`, `XDG_CACHE_HOME`,
 * `HOME`), so a child of a package installed from a registry finds its
 * modules there. Nothing else of the host's environment, its secrets
 * included, reaches the child. On Node, only `TZ`.
 *
 * @example
 * ```ts ignore
 * new Deno.Command(Deno.execPath(), { clearEnv: true, env: moduleChildEnvironment() });
 * ```
 */
export function moduleChildEnvironment(): Record<string, string> {
  const isDeno = (globalThis as { Deno?: unknown }).Deno !== undefined;
  return hostVariables(
    isDeno ? ["TZ", "DENO_DIR", "XDG_CACHE_HOME", "HOME"] : ["TZ"],
  );
}

/**
 * Where a child that reads no path relative to the host's working folder
 * starts: the root folder, which exists even when the host's working folder
 * was deleted under it (a deploy removed the release folder the host
 * started in). On Windows, where a process's working folder cannot be
 * deleted, `undefined`: the child starts in the host's.
 *
 * @example
 * ```ts ignore
 * const cwd = rootFolder();
 * new Deno.Command(Deno.execPath(), { ...(cwd === undefined ? {} : { cwd }) });
 * ```
 */
export function rootFolder(): string | undefined {
  return isWindowsHost() ? undefined : "/";
}

/**
 * Whether the host runs on Windows, by Deno's `build.os` or, without Deno,
 * Node's `process.platform`; `false` in a browser. Read through the
 * runtime's own global, never `Deno` itself, so a module that asks when it
 * is imported (a path separator) also loads on Node.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isWindowsHost } from "./host_environment.ts";
 *
 * assert.equal(isWindowsHost(), Deno.build.os === "windows");
 * ```
 */
export function isWindowsHost(): boolean {
  const { Deno: deno, process } = globalThis as {
    Deno?: { build: { os: string } };
    process?: { platform?: string };
  };
  return deno?.build.os === "windows" ||
    (deno === undefined && process?.platform === "win32");
}
