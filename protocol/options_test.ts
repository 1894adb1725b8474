import assert from "node:assert/strict";
import vm from "node:vm";
import { messageOf, readIntegerOption, readOptions } from "./options.ts";

interface PoolOptions {
  size?: number;
  timeoutMs?: number;
  memoryLimitBytes?: number;
  maxLogBytes?: number;
}

const KNOWN = {
  size: true,
  timeoutMs: true,
  memoryLimitBytes: true,
  maxLogBytes: true,
} as const;
const WHERE = "create the QuickJS pool";

function read(options: unknown): Readonly<PoolOptions> {
  return readOptions(WHERE, options as PoolOptions, KNOWN);
}

Deno.test("readOptions() refuses an unknown key, naming it, the call and the closest known key", () => {
  const cases: [string, string][] = [
    ["timeoutMS", "; did you mean timeoutMs?"],
    ["memoryLimit", "; did you mean memoryLimitBytes?"],
    ["maxLogByte", "; did you mean maxLogBytes?"],
    ["sise", "; did you mean size?"],
    ["tiemoutMs", "; did you mean timeoutMs?"],
    ["catalog", ""],
  ];
  for (const [key, hint] of cases) {
    assert.throws(() => read({ [key]: 1 }), {
      name: "TypeError",
      message: `Cannot create the QuickJS pool: unknown option ${key}${hint}`,
    });
  }
});

Deno.test("readOptions() refuses an options value that is not an object", () => {
  for (const value of [null, 1, "size", true, [], () => {}]) {
    assert.throws(() => read(value), {
      name: "TypeError",
      message: "Cannot create the QuickJS pool: options must be an object",
    });
  }
});

Deno.test("readOptions() reads undefined options, and options given as undefined, as none", () => {
  assert.deepEqual({ ...read(undefined) }, {});
  const snapshot = read({ size: undefined, timeoutMs: 5 });
  assert.equal("size" in snapshot, false);
  assert.equal(snapshot.timeoutMs, 5);
});

Deno.test("readOptions() counts keys inherited from a prototype below Object.prototype", () => {
  const defaults = { size: 2, timeoutMs: 100 };
  const options = Object.create(defaults);
  options.timeoutMs = 50;
  assert.deepEqual({ ...read(options) }, { size: 2, timeoutMs: 50 });
  assert.throws(
    () => read(Object.create({ timeoutMS: 100 })),
    /unknown option timeoutMS; did you mean timeoutMs\?/,
  );
});

Deno.test("readOptions() neither reads nor refuses keys added to Object.prototype", () => {
  const proto = Object.prototype as Record<string, unknown>;
  proto.timeoutMs = 1;
  proto.timeoutMS = 1;
  try {
    assert.deepEqual({ ...read({ size: 2 }) }, { size: 2 });
  } finally {
    delete proto.timeoutMs;
    delete proto.timeoutMS;
  }
});

Deno.test("readOptions() reads an object with a null prototype, a class instance and a Proxy", () => {
  const bare = Object.assign(Object.create(null), { size: 3 });
  assert.equal(read(bare).size, 3);
  class Settings {
    get timeoutMs(): number {
      return 7;
    }
  }
  assert.equal(read(new Settings()).timeoutMs, 7);
  const proxy = new Proxy({ size: 1 }, { get: () => 4 });
  assert.equal(read(proxy).size, 4);
  assert.throws(
    () =>
      read(
        new Proxy({}, {
          ownKeys: () => ["sizes"],
          getOwnPropertyDescriptor: () => ({
            value: 1,
            enumerable: true,
            configurable: true,
          }),
        }),
      ),
    /unknown option sizes; did you mean size\?/,
  );
});

Deno.test("readOptions() reads each option once, so a getter cannot change its answer after the check", () => {
  let reads = 0;
  const options = {
    get timeoutMs() {
      reads++;
      return reads === 1 ? 100 : 0;
    },
  };
  const snapshot = read(options);
  assert.equal(snapshot.timeoutMs, 100);
  assert.equal(snapshot.timeoutMs, 100);
  assert.equal(reads, 1);
  assert.ok(Object.isFrozen(snapshot));
  assert.equal(Object.getPrototypeOf(snapshot), null);
});

Deno.test("readOptions() turns a getter or a Proxy trap that throws into a TypeError naming the option", () => {
  const failure = new Error("no limit today");
  const options = {
    get maxLogBytes(): number {
      throw failure;
    },
  };
  assert.throws(() => read(options), (error: unknown) => {
    assert.ok(error instanceof TypeError);
    assert.equal(
      error.message,
      "Cannot create the QuickJS pool: reading option maxLogBytes threw: no limit today",
    );
    assert.equal(error.cause, failure);
    return true;
  });
  const trapped = new Proxy({}, {
    ownKeys() {
      throw new Error("trapped");
    },
  });
  assert.throws(() => read(trapped), {
    name: "TypeError",
    message:
      "Cannot create the QuickJS pool: the options object could not be read: trapped",
  });
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  assert.throws(() => read(proxy), /the options object could not be read/);
});

Deno.test("readOptions() refuses a prototype chain with no end", () => {
  const endless: object = new Proxy({}, { getPrototypeOf: () => endless });
  assert.throws(
    () => read(endless),
    /the options object could not be read: its prototype chain is deeper than 32 objects/,
  );
});

Deno.test("readOptions() ignores symbol keys and non-enumerable keys that are not options", () => {
  const options = { size: 1, [Symbol("tag")]: true };
  Object.defineProperty(options, "hidden", { value: 1, enumerable: false });
  assert.deepEqual({ ...read(options) }, { size: 1 });
});

Deno.test("readIntegerOption() refuses NaN, Infinity, negatives, fractions, huge values and other types", () => {
  const range = { min: 0, max: 1000, unit: "bytes" };
  for (const value of [NaN, Infinity, -Infinity, -1, 0.5, 1e300, 1001]) {
    assert.throws(
      () => readIntegerOption(WHERE, "maxLogBytes", value, 1, range),
      {
        name: "RangeError",
        message:
          "Cannot create the QuickJS pool: maxLogBytes must be an integer from 0 to 1000 bytes",
      },
    );
  }
  for (const value of ["10", 10n, null, {}, true]) {
    assert.throws(
      () => readIntegerOption(WHERE, "maxLogBytes", value, 1, range),
      {
        name: "TypeError",
        message:
          "Cannot create the QuickJS pool: maxLogBytes must be a number of bytes",
      },
    );
  }
  assert.equal(readIntegerOption(WHERE, "maxLogBytes", 0, 1, range), 0);
});

Deno.test("readOptions() names a nested options object in its messages", () => {
  const read = (value: unknown) =>
    readOptions(WHERE, value as PoolOptions, KNOWN, "limits");
  assert.throws(() => read(null), {
    name: "TypeError",
    message: "Cannot create the QuickJS pool: limits must be an object",
  });
  assert.throws(() => read({ timeoutMS: 1 }), {
    name: "TypeError",
    message:
      "Cannot create the QuickJS pool: unknown option limits.timeoutMS; did you mean limits.timeoutMs?",
  });
  const options = {
    get size(): number {
      throw new Error("x");
    },
  };
  assert.throws(() => read(options), {
    message:
      "Cannot create the QuickJS pool: reading option limits.size threw: x",
  });
  assert.throws(
    () =>
      read(
        new Proxy({}, {
          ownKeys: () => {
            throw new Error("y");
          },
        }),
      ),
    { message: "Cannot create the QuickJS pool: limits could not be read: y" },
  );
});

Deno.test("readOptions() suggests the plural of a key given in the singular", () => {
  assert.throws(
    () =>
      readOptions(
        "read the policy",
        { capability: [] } as { capabilities?: string[] },
        { capabilities: true },
      ),
    {
      name: "TypeError",
      message:
        "Cannot read the policy: unknown option capability; did you mean capabilities?",
    },
  );
});

Deno.test("messageOf() words an error of another realm by its message, as one of its own", () => {
  const foreign = vm.runInNewContext(
    `[new Error("trap"), new TypeError("bad")]`,
  );
  assert.equal(foreign[0] instanceof Error, false);
  assert.equal(messageOf(foreign[0]), "trap");
  assert.equal(messageOf(foreign[1]), "bad");
  assert.equal(messageOf(new Error("trap")), "trap");
  assert.equal(messageOf({ message: "not an error" }), "[object Object]");
});
