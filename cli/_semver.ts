/**
 * The part of npm's version ranges the pack command needs to pick a
 * package's version and its dependencies' versions: `1.2.3`, `^1.2`,
 * `~1.2.3`, `>=1 <2`, `1.x`, `*`, `a || b` and `a - b`, in the loose
 * grammar npm reads dependencies with (`~2.2.0rc`, `=v1.2.3`).
 *
 * @module
 */

/** A parsed version: numbers and the prerelease tag (`""` when none). */
interface Version {
  major: number;
  minor: number;
  patch: number;
  pre: string;
}

const VERSION =
  /^v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$/;
/**
 * A version in a range, read as npm reads dependency ranges (node-semver's
 * loose mode, which sails 0.9's `~2.2.0rc` needs): any run of `v` and `=`
 * before it, a prerelease with or without its `-` and build metadata, both
 * only after all three parts, as npm takes them nowhere else.
 */
const PARTIAL =
  /^[v=]*(\d+|[xX*])(?:\.(\d+|[xX*])(?:\.(\d+|[xX*])(?:-?([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?)?)?$/;

/**
 * The longest version a range may name, in characters: npm reads none
 * longer (node-semver's `MAX_LENGTH`). A prerelease without its `-` may
 * start with digits, so `PARTIAL` tries every split of a patch's digits
 * before a bad last character refuses them, in time that grows with the
 * square of the length: 160,000 digits took three minutes.
 */
const MAX_VERSION_CHARS = 256;

function parseVersion(text: string): Version | null {
  const match = VERSION.exec(text);
  if (match === null) return null;
  return {
    major: Number(match[1]),
    minor: Number(match[2]),
    patch: Number(match[3]),
    pre: match[4] ?? "",
  };
}

function comparePre(a: string, b: string): number {
  if (a === b) return 0;
  if (a === "") return 1;
  if (b === "") return -1;
  const left = a.split(".");
  const right = b.split(".");
  for (let i = 0; i < Math.max(left.length, right.length); i++) {
    const x = left[i];
    const y = right[i];
    if (x === undefined) return -1;
    if (y === undefined) return 1;
    if (x === y) continue;
    const xn = /^\d+$/.test(x);
    const yn = /^\d+$/.test(y);
    if (xn && yn) return Number(x) - Number(y);
    if (xn) return -1;
    if (yn) return 1;
    return x < y ? -1 : 1;
  }
  return 0;
}

function compare(a: Version, b: Version): number {
  return a.major - b.major || a.minor - b.minor || a.patch - b.patch ||
    comparePre(a.pre, b.pre);
}

/**
 * One bound: the version and whether it is inclusive. `implied` marks a
 * bound the reader made up from a partial version or an operator (the `-0`
 * above `^1.2`), which lets no prerelease in, unlike a `-0` the range names.
 */
type Comparator = {
  op: ">=" | ">" | "<" | "<=" | "=";
  version: Version;
  implied?: true;
};

const ZERO_PRE = "0";

/** A made-up bound below the lowest prerelease of `version`. */
function below(version: Version): Comparator {
  return { op: "<", version, implied: true };
}

function v(major: number, minor: number, patch: number, pre = ""): Version {
  return { major, minor, patch, pre };
}

/** A partial version `1.2` as numbers, `undefined` for a wildcard. */
function parsePartial(
  text: string,
): { parts: (number | undefined)[]; pre: string } | null {
  if (text.length > MAX_VERSION_CHARS) return null;
  const match = PARTIAL.exec(text);
  if (match === null) return null;
  const parts = [match[1], match[2], match[3]].map((part) =>
    part === undefined || /^[xX*]$/.test(part) ? undefined : Number(part)
  );
  // A wildcard makes every later part a wildcard too; npm reads no number
  // after one (`1.x.3`).
  const first = parts.indexOf(undefined);
  if (first !== -1 && parts.slice(first).some((part) => part !== undefined)) {
    return null;
  }
  // npm drops the prerelease of a version with a wildcard (`1.2.x-rc`).
  return { parts, pre: first === -1 ? match[4] ?? "" : "" };
}

function comparators(token: string): Comparator[] | null {
  const match = /^(\^|~>?|>=|<=|>|<|=)?\s*(.*)$/.exec(token);
  if (match === null) return null;
  const op = match[1] ?? "";
  const partial = parsePartial(match[2]!);
  if (partial === null) return null;
  const [major, minor, patch] = partial.parts;
  if (major === undefined) {
    return op === "<" || op === ">" ? [below(v(0, 0, 0, ZERO_PRE))] : [];
  }
  const low = v(major, minor ?? 0, patch ?? 0, partial.pre);
  const full = minor !== undefined && patch !== undefined;
  // The smallest version above everything the partial names.
  const next = minor === undefined
    ? v(major + 1, 0, 0, ZERO_PRE)
    : patch === undefined
    ? v(major, minor + 1, 0, ZERO_PRE)
    : v(major, minor, patch + 1, ZERO_PRE);
  switch (op) {
    case "^": {
      const upper = major > 0 || minor === undefined
        ? v(major + 1, 0, 0, ZERO_PRE)
        : minor > 0 || patch === undefined
        ? v(0, minor + 1, 0, ZERO_PRE)
        : v(0, 0, patch + 1, ZERO_PRE);
      return [{ op: ">=", version: low }, below(upper)];
    }
    case "~":
    case "~>": {
      const upper = minor === undefined
        ? v(major + 1, 0, 0, ZERO_PRE)
        : v(major, minor + 1, 0, ZERO_PRE);
      return [{ op: ">=", version: low }, below(upper)];
    }
    case ">=":
      return [{ op: ">=", version: low }];
    case ">":
      return [
        full
          ? { op: ">", version: low }
          : { op: ">=", version: next, implied: true },
      ];
    case "<":
      return [
        full
          ? { op: "<", version: low }
          : below(v(low.major, low.minor, low.patch, ZERO_PRE)),
      ];
    case "<=":
      return [full ? { op: "<=", version: low } : below(next)];
    default:
      return full
        ? [{ op: "=", version: low }]
        : [{ op: ">=", version: low }, below(next)];
  }
}

function satisfiesComparator(version: Version, c: Comparator): boolean {
  const order = compare(version, c.version);
  switch (c.op) {
    case ">=":
      return order >= 0;
    case ">":
      return order > 0;
    case "<":
      return order < 0;
    case "<=":
      return order <= 0;
    case "=":
      return order === 0;
  }
}

/** A parsed range: alternatives, each a list of bounds that must all hold. */
export type Range = Comparator[][];

/**
 * Parses an npm version range.
 *
 * @returns The range, or `null` when it is not one this reader knows.
 */
export function parseRange(text: string): Range | null {
  const alternatives: Range = [];
  for (const raw of text.split("||")) {
    let set = raw.trim();
    const hyphen = /^(\S+)\s+-\s+(\S+)$/.exec(set);
    if (hyphen !== null) set = `>=${hyphen[1]} <=${hyphen[2]}`;
    const tokens = set.replace(/(\^|~>?|>=|<=|>|<|=)\s+/g, "$1").split(/\s+/)
      .filter((token) => token !== "");
    const bounds: Comparator[] = [];
    for (const token of tokens.length === 0 ? ["*"] : tokens) {
      const parsed = comparators(token);
      if (parsed === null) return null;
      bounds.push(...parsed);
    }
    alternatives.push(bounds);
  }
  return alternatives;
}

/**
 * Whether a version is in a range. As npm does, a prerelease is only in a
 * range that names a prerelease of the same `major.minor.patch`.
 */
export function satisfies(versionText: string, range: Range): boolean {
  const version = parseVersion(versionText);
  if (version === null) return false;
  return range.some((bounds) =>
    bounds.every((bound) => satisfiesComparator(version, bound)) &&
    (version.pre === "" ||
      bounds.some((bound) =>
        bound.version.pre !== "" && bound.implied !== true &&
        bound.version.major === version.major &&
        bound.version.minor === version.minor &&
        bound.version.patch === version.patch
      ))
  );
}

/**
 * Picks the version npm would install for a range: the `latest` tag when it
 * is in the range, else the highest version in it.
 *
 * @returns The version, or `undefined` when none is in the range.
 */
export function pickVersion(
  versions: readonly string[],
  range: Range,
  latest: string | undefined,
): string | undefined {
  if (latest !== undefined && satisfies(latest, range)) return latest;
  let best: Version | undefined;
  let bestText: string | undefined;
  for (const text of versions) {
    const version = parseVersion(text);
    if (version === null || !satisfies(text, range)) continue;
    if (best === undefined || compare(version, best) > 0) {
      best = version;
      bestText = text;
    }
  }
  return bestText;
}
