import assert from "node:assert/strict";
import type {
  ExecutionResolution,
  ResolvedModule,
  ResolvedPack,
  SandboxModuleCatalog,
} from "../catalog/types.ts";
import { EMPTY_CATALOG } from "../catalog/empty_catalog.ts";
import { createImportPolicy } from "../policy/import_policy.ts";
import { initScanner } from "../policy/scan_module.ts";
import type { SandboxResult } from "../protocol/mod.ts";
import { type GuestPlan, GuestPlans, MAX_PLANS } from "./_guest_plans.ts";
import { createQuickJSLoader } from "./quickjs_loader.ts";

const DIGEST = "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=";

/** One pack whose `.` export is a module of `source`, frozen unless told. */
function packOf(
  name: string,
  version: string,
  source: string,
): { pack: ResolvedPack; module: ResolvedModule } {
  const freeze = Object.freeze;
  const id = `${name}-${version}`;
  const module: ResolvedModule = freeze({
    id,
    pack: freeze({ name, version }),
    path: "./index.js",
    source,
    digest: DIGEST,
    graphDigest: `sha256-${id}`,
    dependencyIds: [],
  });
  const pack = freeze({
    name,
    version,
    graphDigest: DIGEST,
    exports: freeze({ ".": id }),
    files: freeze({ "./index.js": id }),
  });
  return { pack, module };
}

/** A resolution of `packs`, made fresh as a catalog makes one per run. */
function resolutionOf(
  ...packs: { pack: ResolvedPack; module: ResolvedModule }[]
): ExecutionResolution {
  return {
    statuses: packs.map(({ pack }) => ({
      name: pack.name,
      status: "ok",
      version: pack.version,
      graphDigest: pack.graphDigest,
    })),
    packs: Object.fromEntries(packs.map(({ pack }) => [pack.name, pack])),
    modules: Object.fromEntries(
      packs.map(({ module }) => [module.id, module]),
    ),
    installed: packs.map(({ pack }) => pack.name),
  };
}

function planOf(
  plans: GuestPlans,
  source: string,
  resolution: ExecutionResolution,
): GuestPlan {
  const plan = plans.planFor(
    source,
    resolution,
    createImportPolicy(resolution),
  );
  assert.ok(!("ok" in plan), JSON.stringify(plan));
  return plan as GuestPlan;
}

const SOURCE = 'import a from "a";\nexport default a;';

Deno.test("GuestPlans reuses a plan while the catalog hands out the same frozen packs and modules", async () => {
  await initScanner();
  const plans = new GuestPlans();
  const a = packOf("a", "1.0.0", "export default 1;");
  const first = planOf(plans, SOURCE, resolutionOf(a));
  assert.deepEqual(first.imports.map((entry) => entry.module.id), [
    "a-1.0.0",
  ]);
  assert.equal(first.names.get("a"), "cordon-pack:a@1.0.0/index.js");
  assert.equal(first.warmKey, "cordon-pack:a@1.0.0/index.js sha256-a-1.0.0");
  // A fresh resolution each run, over the same objects.
  assert.equal(planOf(plans, SOURCE, resolutionOf(a)), first);
  assert.equal(plans.size, 1);
});

Deno.test("GuestPlans scans again when a declared pack or an imported module is another object, and only then", async () => {
  await initScanner();
  const plans = new GuestPlans();
  const a1 = packOf("a", "1.0.0", "export default 1;");
  const a2 = packOf("a", "2.0.0", "export default 2;");
  const b = packOf("b", "1.0.0", "export default 3;");
  const first = planOf(plans, SOURCE, resolutionOf(a1));
  const upgraded = planOf(plans, SOURCE, resolutionOf(a2));
  assert.notEqual(upgraded, first);
  assert.equal(upgraded.names.get("a"), "cordon-pack:a@2.0.0/index.js");
  // Another pack object over the same modules: its export may differ.
  const repointed = resolutionOf(a2);
  repointed.modules[a1.module.id] = a1.module;
  repointed.packs.a = Object.freeze({
    ...a2.pack,
    exports: Object.freeze({ ".": a1.module.id }),
  });
  assert.equal(
    planOf(plans, SOURCE, repointed).imports[0]!.module,
    a1.module,
  );
  // Another declared pack next to the same one changes no decision.
  const again = planOf(plans, SOURCE, resolutionOf(a2));
  assert.equal(planOf(plans, SOURCE, resolutionOf(a2, b)), again);
  // The same pack object, but the catalog gives another module for its id.
  assert.equal(
    planOf(plans, SOURCE, resolutionOf(a2)).warmKey,
    upgraded.warmKey,
  );
  const swapped = resolutionOf(a2);
  swapped.modules["a-2.0.0"] = Object.freeze({
    ...a2.module,
    graphDigest: "sha256-rebuilt",
  });
  assert.equal(
    planOf(plans, SOURCE, swapped).warmKey,
    "cordon-pack:a@2.0.0/index.js sha256-rebuilt",
  );
});

Deno.test("GuestPlans denies an import whose pack is no longer declared, after a kept plan", async () => {
  await initScanner();
  const plans = new GuestPlans();
  const a = packOf("a", "1.0.0", "export default 1;");
  planOf(plans, SOURCE, resolutionOf(a));
  const none = resolutionOf();
  const denied = plans.planFor(SOURCE, none, createImportPolicy(none));
  assert.equal("ok" in denied && denied.code, "IMPORT_UNDECLARED");
});

Deno.test("GuestPlans keeps no plan made from packs or modules a catalog may change", async () => {
  await initScanner();
  const plans = new GuestPlans();
  // A pack object whose export the catalog points elsewhere in place.
  const one = packOf("a", "1.0.0", "export default 1;");
  const two = packOf("a", "2.0.0", "export default 2;");
  const pack = Object.freeze({
    ...one.pack,
    exports: { ".": one.module.id },
  });
  const both = (): ExecutionResolution => ({
    ...resolutionOf({ pack, module: one.module }),
    modules: { [one.module.id]: one.module, [two.module.id]: two.module },
  });
  assert.equal(planOf(plans, SOURCE, both()).imports[0]!.module, one.module);
  pack.exports["."] = two.module.id;
  assert.equal(planOf(plans, SOURCE, both()).imports[0]!.module, two.module);
  // A module object whose graph digest the catalog changes in place.
  const module = { ...one.module };
  const frozenPack = { pack: one.pack, module };
  planOf(plans, SOURCE, resolutionOf(frozenPack));
  module.graphDigest = "sha256-changed";
  assert.equal(
    planOf(plans, SOURCE, resolutionOf(frozenPack)).warmKey,
    "cordon-pack:a@1.0.0/index.js sha256-changed",
  );
  // Frozen, but its exports are a getter that can answer another map.
  let current = one.module.id;
  const getterPack = Object.freeze(
    Object.defineProperty({ ...one.pack }, "exports", {
      get: () => Object.freeze({ ".": current }),
      enumerable: true,
    }),
  );
  const viaGetter = (): ExecutionResolution => ({
    ...resolutionOf({ pack: getterPack, module: one.module }),
    modules: { [one.module.id]: one.module, [two.module.id]: two.module },
  });
  assert.equal(
    planOf(plans, SOURCE, viaGetter()).imports[0]!.module,
    one.module,
  );
  current = two.module.id;
  assert.equal(
    planOf(plans, SOURCE, viaGetter()).imports[0]!.module,
    two.module,
  );
  assert.equal(plans.size, 0);
});

Deno.test("GuestPlans keeps at most MAX_PLANS plans, the least recently used out", async () => {
  await initScanner();
  const plans = new GuestPlans();
  const resolution = resolutionOf(packOf("a", "1.0.0", "export default 1;"));
  const firstSource = `${SOURCE}\n// 0`;
  const first = planOf(plans, firstSource, resolution);
  for (let i = 1; i <= MAX_PLANS; i++) {
    planOf(plans, `${SOURCE}\n// ${i}`, resolution);
    // Used again, so never the least recently used.
    assert.equal(planOf(plans, firstSource, resolution), first);
  }
  assert.equal(plans.size, MAX_PLANS);
  assert.equal(planOf(plans, firstSource, resolution), first);
});

function value(result: SandboxResult): unknown {
  assert.equal(result.ok, true, JSON.stringify(result));
  return result.ok ? result.value : undefined;
}

Deno.test("a loader follows a catalog that upgrades or removes a pack between runs of the same source", async () => {
  const versions = [
    packOf("a", "1.0.0", "export default 'one';"),
    packOf("a", "2.0.0", "export default 'two';"),
  ];
  let installed: typeof versions = [versions[0]!];
  const catalog: SandboxModuleCatalog = {
    resolveForExecution(declaration) {
      const resolution = resolutionOf(...installed);
      for (const request of declaration.packages) {
        const name = typeof request === "string" ? request : request.specifier;
        if (resolution.packs[name] !== undefined) continue;
        resolution.statuses.push({
          name,
          status: "not-installed",
          code: "PACK_NOT_INSTALLED",
          message: `Pack "${name}" is not installed: install it`,
        });
      }
      return resolution;
    },
    authorizeDelivery: EMPTY_CATALOG.authorizeDelivery,
    summaries: EMPTY_CATALOG.summaries,
  };
  using loader = await createQuickJSLoader({ catalog });
  const declaration = { source: SOURCE, packages: ["a"] };
  assert.equal(value(await loader.run(declaration)), "one");
  assert.equal(value(await loader.run(declaration)), "one");
  installed = [versions[1]!];
  assert.equal(value(await loader.run(declaration)), "two");
  installed = [];
  const removed = await loader.run(declaration);
  assert.equal(!removed.ok && removed.error.code, "PACK_NOT_INSTALLED");
  const undeclared = await loader.run({ source: SOURCE });
  assert.equal(!undeclared.ok && undeclared.error.code, "IMPORT_UNDECLARED");
  installed = [versions[0]!];
  assert.equal(value(await loader.run(declaration)), "one");
});
