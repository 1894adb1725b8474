import assert from "node:assert/strict";
import { validatePluginManifest } from "./plugin_module.ts";

function messageOf(manifest: unknown): string {
  try {
    validatePluginManifest(manifest);
  } catch (error) {
    assert.ok(error instanceof TypeError);
    return error.message;
  }
  assert.fail("the manifest was accepted");
}

Deno.test("validatePluginManifest() quotes a refused id with control, bidi and separator characters escaped", () => {
  const hidden = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;
  const id = "x\nINFO forged\u001b[2J\u202etxt\u2028\u0085";
  const message = messageOf({ id, version: "1" });
  assert.ok(!hidden.test(message), message);
  assert.ok(
    message.startsWith(
      String
        .raw`Cannot use plugin id "x\nINFO forged\u001b[2J\u202etxt\u2028\u0085": `,
    ),
    message,
  );
});

Deno.test("validatePluginManifest() clips a long refused id and names an id of another type", () => {
  const long = messageOf({ id: "X".repeat(100_000), version: "1" });
  assert.ok(long.startsWith(`Cannot use plugin id "${"X".repeat(80)}…": `));
  assert.ok(long.length < 300, `${long.length} characters`);
  assert.match(
    messageOf({ version: "1" }),
    /^Cannot use plugin id undefined: /,
  );
  assert.match(
    messageOf({ id: 7n, version: "1" }),
    /^Cannot use plugin id of type bigint: /,
  );
});
