/**
 * Paths on the host's file system, written with its own separator, for
 * on-disk discovery and staging.
 *
 * @module
 */

import { isWindowsHost } from "../protocol/host_environment.ts";
import { hostFs } from "./_host_fs.ts";

/** The host's path separator. */
export const SEP: string = isWindowsHost() ? "\\" : "/";

/** A pack-relative, `/`-separated path under `dir`, in the host's separators. */
export function join(dir: string, relative: string): string {
  const inside = relative.startsWith("./") ? relative.slice(2) : relative;
  return `${dir}${SEP}${SEP === "/" ? inside : inside.replaceAll("/", SEP)}`;
}

/**
 * The real path `path` has or will have once created: the real path of
 * its nearest existing folder, then the rest as written, `.` and `..`
 * applied (folders yet to be made are no links).
 */
export async function realPathToBe(path: string): Promise<string> {
  const rest: string[] = [];
  let at = path;
  const fs = hostFs();
  for (;;) {
    try {
      const real = await fs.realPath(at === "" ? "." : at);
      // The first segment is the root: "" on POSIX, the drive on Windows.
      const segments = real.split(SEP).filter((part, i) =>
        i === 0 || part !== ""
      );
      for (const segment of rest.reverse()) {
        if (segment === "..") {
          if (segments.length > 1) segments.pop();
        } else if (segment !== "." && segment !== "") segments.push(segment);
      }
      return segments.length === 1 ? segments[0] + SEP : segments.join(SEP);
    } catch (error) {
      if (fs.errorKind(error) !== "not-found") throw error;
      const cut = Math.max(at.lastIndexOf("/"), at.lastIndexOf("\\"));
      rest.push(at.slice(cut + 1));
      at = cut < 0 ? "" : at.slice(0, cut === 0 ? 1 : cut);
    }
  }
}

/** Whether the real path `path` is the real path `folder` or inside it. */
export function isInside(path: string, folder: string): boolean {
  return (path + SEP).startsWith(folder.replace(/[\\/]+$/, "") + SEP);
}
