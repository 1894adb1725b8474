import assert from "node:assert/strict";
import { renderSchemas } from "../tools/write_schemas.ts";
import {
  DeclarationSchema,
  ModuleIdSchema,
  PackManifestSchema,
  SandboxResultSchema,
  SerializedResponseSchema,
} from "./mod.ts";

Deno.test("the committed JSON Schemas match the zod schemas", async () => {
  for (const [file, text] of Object.entries(renderSchemas())) {
    const committed = await Deno.readTextFile(
      new URL(`../schemas/${file}`, import.meta.url),
    );
    assert.equal(
      committed,
      text,
      `schemas/${file} is stale: run deno task schemas`,
    );
  }
});

Deno.test("ModuleIdSchema refuses paths and encodings", () => {
  for (
    const id of ["", "a/b", "..", "%2e", "a b", "x".repeat(129), "a\\b", "ä"]
  ) {
    assert.equal(ModuleIdSchema.safeParse(id).success, false, id);
  }
});

Deno.test("PackManifestSchema refuses files that leave the pack", () => {
  const manifest = (file: string) => ({
    name: "p",
    version: "1.0.0",
    cordon: { exports: { ".": file } },
  });
  for (
    const file of [
      "../x.js",
      "./../x.js",
      "/x.js",
      "./a/../../x.js",
      "./a\\b.js",
      "./a//b.js",
      ".//b.js",
      "./\ud800.js",
      "./x.ts",
      "x.js",
    ]
  ) {
    assert.equal(
      PackManifestSchema.safeParse(manifest(file)).success,
      false,
      file,
    );
  }
  assert.equal(
    PackManifestSchema.safeParse(manifest("./lib/x.js")).success,
    true,
  );
});

Deno.test("PackManifestSchema requires at least one export", () => {
  const result = PackManifestSchema.safeParse({
    name: "p",
    version: "1.0.0",
    cordon: { exports: {} },
  });
  assert.equal(result.success, false);
});

Deno.test("DeclarationSchema refuses unknown fields and bad pack names", () => {
  assert.equal(
    DeclarationSchema.safeParse({ source: "", packages: ["../x"] }).success,
    false,
  );
  assert.equal(
    DeclarationSchema.safeParse({ source: "", extra: 1 }).success,
    false,
  );
  assert.equal(
    DeclarationSchema.safeParse({
      source: "",
      packages: [{ specifier: "a", graphDigest: "md5-x" }],
    }).success,
    false,
  );
});

Deno.test("SandboxResultSchema tells success from failure", () => {
  const base = {
    logs: [],
    logsTruncated: false,
    metrics: { tier: "worker", durationMs: 1 },
  };
  assert.equal(
    SandboxResultSchema.safeParse({ ok: true, value: { a: [1] }, ...base })
      .success,
    true,
  );
  assert.equal(
    SandboxResultSchema.safeParse({ ok: false, value: 1, ...base }).success,
    false,
  );
});

Deno.test("SerializedResponseSchema refuses two bodies", () => {
  const result = SerializedResponseSchema.safeParse({
    status: 200,
    headers: [],
    body: "a",
    bodyBase64: "YQ==",
  });
  assert.equal(result.success, false);
});
