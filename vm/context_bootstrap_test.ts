import assert from "node:assert/strict";
import v8 from "node:v8";
import vm from "node:vm";
import {
  CONTEXT_BOOTSTRAP_SOURCE,
  type RealmHooks,
} from "./_context_bootstrap.ts";

const INIT_JSON = JSON.stringify({
  pluginId: "p",
  capabilities: [],
  randomKey: Array.from({ length: 8 }, (_, i) => i * 0x01010101),
  maxPayloadBytes: 1 << 20,
});

/** `cordon:host`'s base64 and bodyText in a context given `hooks`. */
function hostOf(hooks: Partial<RealmHooks>) {
  const context = vm.createContext(Object.create(null), {
    codeGeneration: { strings: false, wasm: false },
  });
  const bootstrap = vm.runInContext(CONTEXT_BOOTSTRAP_SOURCE, context);
  const quiet = () => true;
  const control = bootstrap(
    { call: quiet, report: quiet, log: quiet, ...hooks },
    INIT_JSON,
  );
  const exports = control.hostExports();
  const contextUint8Array = vm.runInContext("Uint8Array", context);
  return { ...exports, contextUint8Array } as {
    base64: { decode(text: string): Uint8Array };
    bodyText(request: unknown): string;
    contextUint8Array: typeof Uint8Array;
  };
}

Deno.test("the context takes a decoding hook's bytes only in an ArrayBuffer of its own, never one of the host", () => {
  const lent: string[] = [];
  const host = hostOf({
    bytesOfBase64(text) {
      lent.push(text);
      // The host's own buffer, holding other bytes than the text's.
      return new Uint8Array([9, 9, 9]).buffer;
    },
  });
  const bytes = host.base64.decode("aGk=");
  assert.deepEqual(lent, ["aGk="]);
  assert.deepEqual(Array.from(bytes), [104, 105]);
  assert.ok(bytes instanceof host.contextUint8Array);
  assert.equal(
    Object.getPrototypeOf(bytes.buffer) === ArrayBuffer.prototype,
    false,
  );
});

Deno.test("the context decodes for itself where a hook throws, answers false or answers what is not text", () => {
  for (
    const answer of [
      () => {
        throw new Error("host failure");
      },
      () => false,
      () => ({ text: "forged" }),
    ]
  ) {
    const host = hostOf({
      bytesOfBase64: answer as RealmHooks["bytesOfBase64"],
      textOfBase64: answer as RealmHooks["textOfBase64"],
    });
    assert.deepEqual(Array.from(host.base64.decode("aGk=")), [104, 105]);
    assert.equal(host.bodyText({ bodyBase64: "aMOp" }), "h\u00e9");
  }
  const lentText = hostOf({ textOfBase64: () => "from the hook" });
  assert.equal(lentText.bodyText({ bodyBase64: "aMOp" }), "from the hook");
});

Deno.test("a finalization registry's cleanup runs as a promise job of the context, not when the engine collects", async () => {
  // As a realm makes it: promise jobs run only when the realm drains them.
  const context = vm.createContext(Object.create(null), {
    codeGeneration: { strings: false, wasm: false },
    microtaskMode: "afterEvaluate",
  });
  const bootstrap = vm.runInContext(CONTEXT_BOOTSTRAP_SOURCE, context);
  const quiet = () => true;
  bootstrap({ call: quiet, report: quiet, log: quiet }, INIT_JSON).lockdown();
  vm.runInContext(
    `globalThis.cleaned = [];
    const registry = new FinalizationRegistry((held) => cleaned.push(held));
    registry.register({}, "collected");
    globalThis.kept = [registry, registry instanceof FinalizationRegistry];`,
    context,
  );
  // Contexts made while the flag is set get a gc(): only this one.
  v8.setFlagsFromString("--expose-gc");
  try {
    (vm.runInNewContext("gc") as () => void)();
  } finally {
    v8.setFlagsFromString("--no-expose-gc");
  }
  // The engine calls cleanups from a task of its own, in a later turn.
  await new Promise((resolve) => setTimeout(resolve, 50));
  const seen = () => vm.runInContext("JSON.stringify(cleaned)", context);
  assert.equal(seen(), "[]");
  // The realm drains the context's jobs under a call's or ping's deadline.
  vm.runInContext("", context);
  assert.equal(seen(), '["collected"]');
  assert.equal(vm.runInContext("kept[1]", context), true);
});
