/**
 * A host for `host_locale_test.ts`: runs one guest that reads its default
 * locale on the worker, process and QuickJS tiers (in-thread loader and the
 * pool's runner processes) and prints, as one JSON line, what this host
 * itself reads and each tier's answer. The test starts it with another
 * `LANG` and `LC_ALL`. It holds no tests, and its `_test.ts` name keeps it
 * out of the published package.
 *
 * @module
 */

import { EMPTY_CATALOG } from "../catalog/mod.ts";
import { createQuickJSLoader, createQuickJSPool } from "../loader/mod.ts";
import type { SandboxResult } from "../protocol/mod.ts";
import { createProcessSandbox } from "./process_sandbox.ts";
import { createWorkerSandbox } from "./worker_sandbox.ts";

/**
 * What a guest's locale shows: `Intl`'s default locale (null without
 * `Intl`), a number and a date in the default format, and the upper case
 * of "i" (dotted in Turkish).
 */
export function readLocale(): unknown[] {
  return [
    typeof Intl === "undefined"
      ? null
      : new Intl.DateTimeFormat().resolvedOptions().locale,
    (1234.5).toLocaleString(),
    // Noon UTC: the same day in every time zone.
    new Date(Date.UTC(1970, 0, 1, 12)).toLocaleDateString(),
    "i".toLocaleUpperCase(),
  ];
}

const GUEST = `export default ${readLocale.toString()};`;

function valueOf(result: SandboxResult): unknown {
  return result.ok ? result.value : result.error;
}

/** Each tier's answer to the guest, and this host's own. */
async function answers(): Promise<Record<string, unknown>> {
  await using worker = createWorkerSandbox({ pool: 1 });
  await using processSandbox = createProcessSandbox();
  using loader = await createQuickJSLoader({ catalog: EMPTY_CATALOG });
  await using pool = await createQuickJSPool({
    catalog: EMPTY_CATALOG,
    size: 1,
  });
  const tiers: Record<string, unknown> = {};
  for (
    const [tier, runner] of [
      ["worker", worker],
      ["process", processSandbox],
      ["quickjs loader", loader],
      [`quickjs pool (${pool.isolation})`, pool],
    ] as const
  ) {
    tiers[tier] = valueOf(await runner.run(GUEST, { timeoutMs: 10_000 }));
  }
  return { host: readLocale(), tiers };
}

if (import.meta.main) console.log(JSON.stringify(await answers()));
