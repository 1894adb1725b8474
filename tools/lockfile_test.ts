import assert from "node:assert/strict";

interface LockedPackage {
  dependencies?: string[];
  optionalDependencies?: string[];
}

interface Lockfile {
  specifiers: Record<string, string>;
  npm: Record<string, LockedPackage>;
}

const ROOT = new URL("../", import.meta.url);
const config = JSON.parse(
  await Deno.readTextFile(new URL("deno.json", ROOT)),
) as { imports: Record<string, string> };
const lock = JSON.parse(
  await Deno.readTextFile(new URL("deno.lock", ROOT)),
) as Lockfile;

/** `zod@4.6.7_peer@1.0.0` → `zod`; `@scope/name@1.0.0` → `@scope/name`. */
function packageName(key: string): string {
  return key.slice(0, key.indexOf("@", 1));
}

/** The lock key a dependency entry names: the key itself, or a bare name. */
function lockKeyOf(entry: string): string {
  if (entry in lock.npm) return entry;
  const keys = Object.keys(lock.npm).filter((key) =>
    packageName(key) === entry
  );
  assert.equal(keys.length, 1, `deno.lock names ${entry} ambiguously`);
  return keys[0]!;
}

/** Every lock key `roots` need, themselves included. */
function closure(roots: string[]): Set<string> {
  const reached = new Set<string>();
  const pending = [...roots];
  while (pending.length > 0) {
    const key = pending.pop()!;
    if (reached.has(key)) continue;
    reached.add(key);
    const locked = lock.npm[key];
    assert.ok(locked, `deno.lock has no entry for ${key}`);
    for (
      const entry of [
        ...(locked.dependencies ?? []),
        ...(locked.optionalDependencies ?? []),
      ]
    ) pending.push(lockKeyOf(entry));
  }
  return reached;
}

Deno.test("deno.lock locks only what deno.json imports, so serve and run on a fresh clone install no benchmark's packages", () => {
  const imported = Object.values(config.imports).filter((specifier) =>
    specifier.startsWith("npm:")
  );
  assert.deepEqual(
    Object.keys(lock.specifiers).sort(),
    [...imported].sort(),
    "deno.lock's specifiers differ from deno.json's imports: a benchmark's npm: import belongs in bench/deno.lock (deno check --lock=bench/deno.lock)",
  );
  const needed = closure(
    imported.map((specifier) =>
      `${packageName(specifier.slice(4))}@${lock.specifiers[specifier]}`
    ),
  );
  const unneeded = Object.keys(lock.npm).filter((key) => !needed.has(key));
  assert.deepEqual(unneeded, [], "deno.lock holds packages nothing imports");
});
