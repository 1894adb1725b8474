// This module is Deno and Node compatible.

/**
 * The host's `TZ`, handed to the children cordon starts so that every tier
 * tells a guest the same local time: the in-thread QuickJS engine takes
 * local time from the host process (its `Date`, so its `TZ`), while a child
 * whose environment is cleared would take the machine's zone instead.
 *
 * @module
 */

import process from "node:process";

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
  const deno = (globalThis as { Deno?: typeof Deno }).Deno;
  if (deno !== undefined) {
    const { state } = deno.permissions.querySync({
      name: "env",
      variable: "TZ",
    });
    if (state !== "granted") return {};
  }
  const zone = process.env.TZ;
  return zone === undefined ? {} : { TZ: zone };
}
