import assert from "node:assert/strict";
import { withPollutedPrototype } from "../protocol/_test_hostile_test.ts";
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

Deno.test("validatePluginManifest() reads each capability once and checks the names it keeps, where a getter's second answer or an array's own every() was kept unchecked", () => {
  let reads = 0;
  const flipping = ["kv.read"];
  Object.defineProperty(flipping, "0", {
    get: () => ++reads === 1 ? "kv.read" : 42,
    enumerable: true,
  });
  assert.deepEqual(
    validatePluginManifest({ id: "p", version: "1", capabilities: flipping })
      .capabilities,
    ["kv.read"],
  );
  assert.equal(reads, 1);
  assert.throws(
    () =>
      validatePluginManifest({
        id: "p",
        version: "1",
        // deno-lint-ignore no-sparse-arrays
        capabilities: ["kv.read", , "kv.write"],
      }),
    TypeError,
  );
  const vouching = ["kv.read", {}];
  Object.defineProperty(vouching, "every", { value: () => true });
  assert.throws(
    () =>
      validatePluginManifest({ id: "p", version: "1", capabilities: vouching }),
    {
      name: "TypeError",
      message:
        'Cannot read the manifest of plugin "p": capabilities must be a list of names',
    },
  );
});

Deno.test("validatePluginManifest() names capabilities when reading them throws, as every list option is named", () => {
  const trapped = new Proxy(["kv.read"], {
    get(target, key, receiver) {
      if (key === "0") throw new Error("trap refused");
      return Reflect.get(target, key, receiver);
    },
  });
  assert.throws(
    () =>
      validatePluginManifest({ id: "p", version: "1", capabilities: trapped }),
    {
      name: "TypeError",
      message:
        'Cannot read the manifest of plugin "p": capabilities could not be read: trap refused',
    },
  );
});

Deno.test("validatePluginManifest() keeps no capability or name that only a polluted Object.prototype holds", async () => {
  const manifest = await withPollutedPrototype(
    { capabilities: ["admin"], name: "Trusted" },
    () => validatePluginManifest({ id: "p", version: "1.0.0" }),
  );
  assert.equal(manifest.capabilities, undefined);
  assert.equal(manifest.name, undefined);
  await withPollutedPrototype({ capabilities: ["admin"] }, () => {
    assert.equal(manifest.capabilities, undefined);
  });
});
