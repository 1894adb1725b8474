// This module is Deno and Node compatible.

/**
 * What of the host's environment the children cordon starts are handed:
 * named variables only, those the host may read. `TZ` goes to every child,
 * so every tier tells a guest the same local time: the in-thread QuickJS
 * engine takes local time from the host process (its `Date`, so its `TZ`),
 * while a child whose environment is cleared would take the machine's zone.
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

// Read through the runtime's own global rather than an import of
// node:process, so the browser bundle of the loader can include this module.
function readableVariable(variable: string): string | undefined {
  const { Deno: deno, process } = globalThis as {
    Deno?: typeof Deno;
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
