/**
 * Helpers of the realm's differential fuzzers: a seeded generator, so a
 * failing case replays from its seed, what a call gives as data, and the
 * comparison that prints every disagreeing input beside both answers.
 *
 * @module
 */

import assert from "node:assert/strict";

/** Seeded random choices; the same seed gives the same sequence. */
export interface Random {
  /** An integer from 0 up to, not including, `count`. */
  below(count: number): number;
  /** One of `items`. */
  pick<T>(items: readonly T[]): T;
  /** True with the given probability. */
  chance(probability: number): boolean;
}

/** A small, fast generator (mulberry32): good enough to choose inputs. */
export function seeded(seed: number): Random {
  let state = seed >>> 0;
  const unit = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const below = (count: number) => Math.floor(unit() * count);
  return {
    below,
    pick: (items) => items[below(items.length)]!,
    chance: (probability) => unit() < probability,
  };
}

/**
 * What `make` gives as comparable data: its value, or the class and name
 * of what it throws (messages may differ between engines, names may not).
 */
export function outcome(make: () => unknown): unknown {
  try {
    return { value: make() };
  } catch (error) {
    const thrown = error as Error;
    return { threw: [thrown?.constructor?.name, thrown?.name] };
  }
}

/** JSON, with BigInts and numbers JSON cannot hold written as text. */
function shown(value: unknown): string {
  return JSON.stringify(
    value,
    (_, item) =>
      typeof item === "bigint"
        ? `${item}n`
        : typeof item === "number" && !Number.isFinite(item)
        ? `${item}`
        : item === undefined
        ? "undefined"
        : item,
  );
}

/**
 * A known difference between the realm and Deno (a deviation of Deno's
 * from the standard, or a documented limit of the realm's): why, and
 * whether it explains a case.
 */
export type KnownDifference<T> = [reason: string, covers: (item: T) => boolean];

/** One case and what the realm and Deno answered for it. */
export interface Answers<T> {
  item: T;
  realm: unknown;
  deno: unknown;
}

/**
 * Asserts that the realm and Deno gave the same answer for every case but
 * those a known difference explains; a failure lists each case that
 * differs (as JSON, so it can be pasted into a test) with both answers,
 * after `origin`, which says where the cases come from ("seed 7").
 *
 * @returns How many differing cases each known difference explained.
 */
export function assertAgree<T>(
  origin: string,
  answers: readonly Answers<T>[],
  known: readonly KnownDifference<T>[] = [],
): Record<string, number> {
  const found: string[] = [];
  const explained: Record<string, number> = {};
  for (const { item, realm, deno } of answers) {
    try {
      assert.deepEqual(realm, deno);
    } catch {
      const reason = known.find(([, covers]) => covers(item))?.[0];
      if (reason !== undefined) {
        explained[reason] = (explained[reason] ?? 0) + 1;
        continue;
      }
      found.push(
        `case ${shown(item)}\n  realm: ${shown(realm)}\n  deno:  ${
          shown(deno)
        }`,
      );
    }
  }
  assert.equal(
    found.length,
    0,
    `${origin}: ${found.length} of ${answers.length} cases differ\n` +
      found.slice(0, 20).join("\n"),
  );
  return explained;
}

/** {@linkcode assertAgree} over each case's answers from two functions. */
export function assertSameAnswers<T>(
  seed: number,
  cases: readonly T[],
  realm: (item: T) => unknown,
  deno: (item: T) => unknown,
  known: readonly KnownDifference<T>[] = [],
): Record<string, number> {
  return assertAgree(
    `seed ${seed}`,
    cases.map((item) => ({ item, realm: realm(item), deno: deno(item) })),
    known,
  );
}

/**
 * {@linkcode assertSameAnswers} for answers that take promises: each
 * case's answers are awaited in turn.
 */
export async function assertSameAsyncAnswers<T>(
  seed: number,
  cases: readonly T[],
  realm: (item: T) => Promise<unknown>,
  deno: (item: T) => Promise<unknown>,
  known: readonly KnownDifference<T>[] = [],
): Promise<Record<string, number>> {
  const answers: Answers<T>[] = [];
  for (const item of cases) {
    answers.push({ item, realm: await realm(item), deno: await deno(item) });
  }
  return assertAgree(`seed ${seed}`, answers, known);
}
