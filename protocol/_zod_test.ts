import assert from "node:assert/strict";

Deno.test("the protocol's schemas never construct a Function, so a strict Content-Security-Policy reports nothing", async () => {
  // Each test module runs in its own realm, so no schema exists yet: count
  // every `new Function(...)` and `Function(...)` from the first import on.
  const calls: unknown[][] = [];
  const original = globalThis.Function;
  const counting = new Proxy(original, {
    construct(target, args) {
      calls.push(args);
      return Reflect.construct(target, args);
    },
    apply(target, self, args) {
      calls.push(args);
      return Reflect.apply(target, self, args);
    },
  });
  globalThis.Function = counting;
  try {
    const { DeclarationSchema, PackManifestSchema, SandboxResultSchema } =
      await import("./mod.ts");
    const declaration = DeclarationSchema.parse({
      source: "export default 1;",
    });
    assert.deepEqual(declaration.packages, []);
    PackManifestSchema.parse({
      name: "p",
      version: "1.0.0",
      cordon: { exports: { ".": "./index.js" } },
    });
    const result = SandboxResultSchema.parse({
      ok: true,
      value: 3,
      logs: [],
      logsTruncated: false,
      metrics: { tier: "quickjs", durationMs: 1.5 },
    });
    assert.equal(result.ok, true);
  } finally {
    globalThis.Function = original;
  }
  assert.deepEqual(calls, []);
});

Deno.test("every protocol module takes zod from _zod.ts, the module that configures it", async () => {
  for await (const entry of Deno.readDir(new URL(".", import.meta.url))) {
    if (!entry.name.endsWith(".ts") || entry.name === "_zod.ts") continue;
    const text = await Deno.readTextFile(new URL(entry.name, import.meta.url));
    assert.doesNotMatch(
      text,
      /\bfrom\s+["'](?:npm:)?zod(?:@[^"'/]*)?(?:\/[^"']*)?["']/,
      `${entry.name} imports zod directly: import { z } from "./_zod.ts"`,
    );
  }
});
