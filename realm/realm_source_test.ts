import assert from "node:assert/strict";
import vm from "node:vm";
import { CordonError } from "../protocol/cordon_error.ts";
import { alteredRealmCode, realmScripts, realmSource } from "./realm_source.ts";

function double(value: number): number {
  return value * 2;
}

function isStrict(): boolean {
  return (function (this: unknown) {
    return this === undefined;
  })();
}

function entry(
  library: { double: typeof double; isStrict: typeof isStrict },
  data: { offset: number },
  value: number,
): [number, boolean] {
  return [library.double(value) + data.offset, library.isStrict()];
}

const LIBRARY = { double, isStrict };
const DATA = { offset: 1 };

/** Evaluates the scripts one by one in a new context, as the loader does. */
function evaluateScripts(): (value: number) => [number, boolean] {
  const context = vm.createContext({});
  const scripts = realmScripts(entry, LIBRARY, DATA);
  const library = vm.runInContext("({})", context);
  for (const [name, script] of scripts.library) {
    library[name] = vm.runInContext(script, context);
  }
  return vm.runInContext(scripts.bind, context)(library);
}

Deno.test("realmScripts() evaluated one by one gives the function realmSource() gives", () => {
  const joined = vm.runInNewContext(realmSource(entry, LIBRARY, DATA));
  const scripted = evaluateScripts();
  assert.deepEqual([...joined(20)], [41, true]);
  assert.deepEqual([...scripted(20)], [41, true]);
});

Deno.test("realmScripts() names each library function in the library's order and makes it in the realm", () => {
  const scripts = realmScripts(entry, LIBRARY, DATA);
  assert.deepEqual(scripts.library.map(([name]) => name), [
    "double",
    "isStrict",
  ]);
  const context = vm.createContext({});
  const made = vm.runInContext(scripts.library[0]![1], context);
  assert.equal(made(4), 8);
  assert.notEqual(made, double);
  assert.equal(
    Object.getPrototypeOf(made),
    vm.runInContext("Function.prototype", context),
  );
  assert.ok(Object.isFrozen(scripts) && Object.isFrozen(scripts.library));
});

Deno.test("realmScripts() refuses a library member that is not a function", () => {
  assert.throws(
    () =>
      realmScripts(
        entry,
        { ...LIBRARY, double: 2 } as unknown as typeof LIBRARY,
        DATA,
      ),
    {
      name: "TypeError",
      message: "Cannot turn double into realm source: pass a function",
    },
  );
});

Deno.test("alteredRealmCode() names the helper that a bundler added to a realm function, which the realm lacks, with REALM_CODE_ALTERED", () => {
  // As esbuild's keepNames leaves a function: a call of its module's helper.
  const __name = <T>(fn: T, _name: string): T => fn;
  function entry(): number {
    const inner = __name(() => 1, "inner");
    return inner();
  }
  const started = vm.runInNewContext(realmSource(entry, {}, null));
  let thrown: unknown;
  try {
    started();
  } catch (error) {
    thrown = error;
  }
  const error = alteredRealmCode(thrown, "start the realm");
  assert.ok(error instanceof CordonError);
  assert.equal(error.code, "REALM_CODE_ALTERED");
  assert.match(
    error.message,
    /^Cannot start the realm: cordon's realm code, .*\(__name is not defined\).*--keep-names.*coverage/,
  );
  assert.equal(
    alteredRealmCode(new TypeError("other"), "start the realm"),
    null,
  );
});

Deno.test("realmSource() fails as the realm starts when a bundler gave realm code a helper of its own, even where the entry has no shape it rewrites", () => {
  function plainEntry(_library: unknown, _data: unknown, value: number) {
    return value + 1;
  }
  const source = realmSource(plainEntry, {}, null);
  assert.equal(vm.runInNewContext(source)(1), 2);
  // As esbuild's keepNames leaves a named class: a static block that calls
  // its module's helper, which the realm lacks.
  const rewritten = source.replace(
    /\bclass ([A-Za-z_$][\w$]*) \{/g,
    (text, name) => `${text} static { __name(this, "${name}"); }`,
  );
  assert.notEqual(rewritten, source);
  let thrown: unknown;
  try {
    vm.runInNewContext(rewritten);
  } catch (error) {
    thrown = error;
  }
  assert.equal(
    alteredRealmCode(thrown, "start the realm")?.code,
    "REALM_CODE_ALTERED",
  );
});
