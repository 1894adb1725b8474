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

import process from "node:process";

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
  const deno = (globalThis as { Deno?: typeof Deno }).Deno;
  const variables: Record<string, string> = {};
  for (const variable of names) {
    if (
      deno !== undefined &&
      deno.permissions.querySync({ name: "env", variable }).state !==
        "granted"
    ) {
      continue;
    }
    const value = process.env[variable];
    if (value !== undefined) variables[variable] = value;
  }
  return variables;
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
