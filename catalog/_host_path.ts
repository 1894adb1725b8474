/**
 * Paths on the host's file system, written with its own separator, for
 * on-disk discovery and staging.
 *
 * @module
 */

/** The host's path separator. */
export const SEP: string = Deno.build.os === "windows" ? "\\" : "/";

/** A pack-relative, `/`-separated path under `dir`, in the host's separators. */
export function join(dir: string, relative: string): string {
  const inside = relative.startsWith("./") ? relative.slice(2) : relative;
  return `${dir}${SEP}${SEP === "/" ? inside : inside.replaceAll("/", SEP)}`;
}
