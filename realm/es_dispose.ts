// This module is browser compatible.

/**
 * Explicit resource management (ES2026) for a realm whose engine lacks it
 * (QuickJS): `SuppressedError`, `DisposableStack`, `AsyncDisposableStack`
 * and the iterator prototypes' `[Symbol.dispose]` and
 * `[Symbol.asyncDispose]`. QuickJS cannot parse `using`, but TypeScript and
 * esbuild turn it into helpers that need these, and libraries define
 * `[Symbol.dispose]()` methods. Errors carry V8's names and messages. Runs
 * inside a realm: self-contained, turned into source by
 * `realm/realm_source.ts`.
 *
 * @module
 */

/** What {@linkcode createDisposal} makes. */
export interface Disposal {
  SuppressedError: typeof SuppressedError;
  DisposableStack: typeof DisposableStack;
  AsyncDisposableStack: typeof AsyncDisposableStack;
  /** `Iterator.prototype[Symbol.dispose]`. */
  iteratorDispose: (this: Iterator<unknown>) => void;
  /** `%AsyncIteratorPrototype%[Symbol.asyncDispose]`. */
  asyncIteratorDispose: (this: AsyncIterator<unknown>) => Promise<void>;
}

/**
 * Makes the constructors and methods. Self-contained: it captures the
 * intrinsics it uses when it is called.
 *
 * @param dispose The realm's `Symbol.dispose`.
 * @param asyncDispose The realm's `Symbol.asyncDispose`.
 * @param shown How a message shows a value (`realm/es_builtins.ts`).
 * @returns The constructors and the iterators' methods.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createDisposal } from "./es_dispose.ts";
 *
 * const { DisposableStack } = createDisposal(
 *   Symbol.dispose,
 *   Symbol.asyncDispose,
 *   String,
 * );
 * const stack = new DisposableStack();
 * const order: number[] = [];
 * stack.defer(() => order.push(1));
 * stack.defer(() => order.push(2));
 * stack.dispose();
 * assert.deepEqual(order, [2, 1]);
 * ```
 */
export function createDisposal(
  dispose: symbol,
  asyncDispose: symbol,
  shown: (value: unknown) => string,
): Disposal {
  "use strict";
  const { defineProperty, getOwnPropertyDescriptor, setPrototypeOf } = Object;
  const { apply, construct } = Reflect;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const ReferenceErrorCtor = ReferenceError;
  const WeakMapCtor = WeakMap;

  function SuppressedErrorFn(
    this: unknown,
    error: unknown,
    suppressed: unknown,
    message?: unknown,
  ): SuppressedError {
    const text = message === undefined ? undefined : `${message as string}`;
    const made = construct(ErrorCtor, [], new.target ?? SuppressedErrorFn);
    const field = (key: string, value: unknown) =>
      defineProperty(made, key, {
        value,
        writable: true,
        enumerable: false,
        configurable: true,
      });
    if (text !== undefined) field("message", text);
    field("error", error);
    field("suppressed", suppressed);
    return made;
  }

  /** Gives a constructor its name and members, as V8 lays them out. */
  function classLike(
    ctor: (...args: never[]) => unknown,
    name: string,
    proto: object,
    members: [PropertyKey, unknown][],
  ): void {
    defineProperty(ctor, "prototype", { value: proto, writable: false });
    defineProperty(proto, "constructor", {
      value: ctor,
      writable: true,
      enumerable: false,
      configurable: true,
    });
    defineProperty(ctor, "name", { value: name });
    for (const [key, value] of members) {
      defineProperty(proto, key, {
        value,
        writable: true,
        enumerable: false,
        configurable: true,
      });
    }
  }
  const suppressedProto = SuppressedErrorFn.prototype as object;
  setPrototypeOf(suppressedProto, ErrorCtor.prototype);
  setPrototypeOf(SuppressedErrorFn, ErrorCtor);
  classLike(SuppressedErrorFn, "SuppressedError", suppressedProto, [
    ["name", "SuppressedError"],
    ["message", ""],
  ]);

  // A resource: [value, method, how]; how is 0 (call), 1 (call, then await
  // the result) or 2 (call a sync method for an async stack: no await).
  type Resource = [unknown, unknown, number];
  interface Capability {
    disposed: boolean;
    resources: Resource[];
  }
  const SYNC = "DisposableStack";
  const ASYNC = "AsyncDisposableStack";
  const stacks = new WeakMapCtor<object, Capability>();
  const kinds = new WeakMapCtor<object, string>();

  function stateOf(stack: unknown, kind: string, method: string): Capability {
    const state = stacks.get(stack as object);
    if (state === undefined || kinds.get(stack as object) !== kind) {
      throw new TypeErrorCtor(
        `Method ${
          method === "disposed" ? "get " : ""
        }${kind}.prototype.${method} called on incompatible receiver ${
          shown(stack)
        }`,
      );
    }
    return state;
  }

  function pending(stack: unknown, kind: string, method: string): Capability {
    const state = stateOf(stack, kind, method);
    if (state.disposed) {
      throw new ReferenceErrorCtor(
        `Cannot call ${kind}.prototype.${method} on an already-disposed DisposableStack`,
      );
    }
    return state;
  }

  function callable(value: unknown): (...args: unknown[]) => unknown {
    if (typeof value !== "function") {
      throw new TypeErrorCtor(`${shown(value)} is not a function`);
    }
    return value as (...args: unknown[]) => unknown;
  }

  function disposeMethod(value: object, key: symbol): unknown {
    const method = (value as Record<symbol, unknown>)[key];
    return method === undefined || method === null ? undefined : method;
  }

  function add(state: Capability, value: unknown, isAsync: boolean): void {
    if ((value === undefined || value === null) && !isAsync) return;
    if (value === undefined || value === null) {
      state.resources.push([undefined, undefined, 1]);
      return;
    }
    if (typeof value !== "object" && typeof value !== "function") {
      throw new TypeErrorCtor(
        "An object is expected with `using` declarations",
      );
    }
    let method = isAsync ? disposeMethod(value, asyncDispose) : undefined;
    let how = 1;
    if (method === undefined) {
      method = disposeMethod(value, dispose);
      how = isAsync ? 2 : 0;
    }
    if (typeof method !== "function") {
      throw new TypeErrorCtor(`${shown(dispose)} is not a function`);
    }
    state.resources.push([value, method, how]);
  }

  function suppress(error: unknown, suppressed: unknown): unknown {
    return new (SuppressedErrorFn as unknown as typeof SuppressedError)(
      error,
      suppressed,
      "An error was suppressed during disposal",
    );
  }

  function take(state: Capability): Resource[] {
    const { resources } = state;
    state.disposed = true;
    state.resources = [];
    return resources;
  }

  function moved(state: Capability, proto: object, kind: string): object {
    const stack = { __proto__: proto };
    stacks.set(stack, { disposed: false, resources: take(state) });
    kinds.set(stack, kind);
    return stack;
  }

  function DisposableStackFn(this: object): void {
    if (new.target === undefined) {
      throw new TypeErrorCtor("Constructor DisposableStack requires 'new'");
    }
    stacks.set(this, { disposed: false, resources: [] });
    kinds.set(this, SYNC);
  }
  const syncProto = DisposableStackFn.prototype as object;
  const syncMembers = {
    use(this: unknown, value: unknown): unknown {
      add(pending(this, SYNC, "use"), value, false);
      return value;
    },
    dispose(this: unknown): void {
      const state = stateOf(this, SYNC, "dispose");
      if (state.disposed) return;
      let failed = false;
      let thrown: unknown;
      const resources = take(state);
      for (let i = resources.length - 1; i >= 0; i--) {
        const [value, method] = resources[i]!;
        try {
          apply(method as () => unknown, value, []);
        } catch (error) {
          thrown = failed ? suppress(error, thrown) : error;
          failed = true;
        }
      }
      if (failed) throw thrown;
    },
    adopt(this: unknown, value: unknown, onDispose: unknown): unknown {
      const state = pending(this, SYNC, "adopt");
      const fn = callable(onDispose);
      state.resources.push([undefined, () => fn(value), 0]);
      return value;
    },
    defer(this: unknown, onDispose: unknown): void {
      const state = pending(this, SYNC, "defer");
      const fn = callable(onDispose);
      state.resources.push([undefined, () => fn(), 0]);
    },
    move(this: unknown): object {
      return moved(pending(this, SYNC, "move"), syncProto, SYNC);
    },
    get disposed(): boolean {
      return stateOf(this, SYNC, "disposed").disposed;
    },
  };

  function AsyncDisposableStackFn(this: object): void {
    if (new.target === undefined) {
      throw new TypeErrorCtor(
        "Constructor AsyncDisposableStack requires 'new'",
      );
    }
    stacks.set(this, { disposed: false, resources: [] });
    kinds.set(this, ASYNC);
  }
  const asyncProto = AsyncDisposableStackFn.prototype as object;
  const asyncMembers = {
    use(this: unknown, value: unknown): unknown {
      add(pending(this, ASYNC, "use"), value, true);
      return value;
    },
    async disposeAsync(this: unknown): Promise<void> {
      const state = stacks.get(this as object);
      if (state === undefined || kinds.get(this as object) !== ASYNC) {
        throw new TypeErrorCtor("Receiver is not an AsyncDisposableStack");
      }
      if (state.disposed) return;
      let failed = false;
      let thrown: unknown;
      const resources = take(state);
      for (let i = resources.length - 1; i >= 0; i--) {
        const [value, method, how] = resources[i]!;
        try {
          const result = method === undefined
            ? undefined
            : apply(method as () => unknown, value, []);
          if (how !== 2) await result;
        } catch (error) {
          thrown = failed ? suppress(error, thrown) : error;
          failed = true;
        }
      }
      if (failed) throw thrown;
    },
    adopt(this: unknown, value: unknown, onDispose: unknown): unknown {
      const state = pending(this, ASYNC, "adopt");
      const fn = callable(onDispose);
      state.resources.push([undefined, () => fn(value), 1]);
      return value;
    },
    defer(this: unknown, onDispose: unknown): void {
      const state = pending(this, ASYNC, "defer");
      const fn = callable(onDispose);
      state.resources.push([undefined, () => fn(), 1]);
    },
    move(this: unknown): object {
      return moved(pending(this, ASYNC, "move"), asyncProto, ASYNC);
    },
    get disposed(): boolean {
      return stateOf(this, ASYNC, "disposed").disposed;
    },
  };

  for (
    const [ctor, proto, members, disposeKey, disposeName, tag] of [
      [DisposableStackFn, syncProto, syncMembers, dispose, "dispose", SYNC],
      [
        AsyncDisposableStackFn,
        asyncProto,
        asyncMembers,
        asyncDispose,
        "disposeAsync",
        ASYNC,
      ],
    ] as const
  ) {
    const list: [PropertyKey, unknown][] = [];
    for (const key of ["use", disposeName, "adopt", "defer", "move"]) {
      list.push([key, (members as Record<string, unknown>)[key]]);
    }
    classLike(ctor, tag, proto, list);
    defineProperty(proto, "disposed", {
      ...getOwnPropertyDescriptor(members, "disposed"),
      enumerable: false,
    });
    defineProperty(proto, disposeKey, {
      value: (members as Record<string, unknown>)[disposeName],
      writable: true,
      enumerable: false,
      configurable: true,
    });
    defineProperty(proto, Symbol.toStringTag, {
      value: tag,
      writable: false,
      enumerable: false,
      configurable: true,
    });
  }

  const iteratorMembers = {
    [dispose](this: Iterator<unknown>): void {
      const ret = disposeMethod(this, "return" as unknown as symbol);
      if (ret === undefined) return;
      if (typeof ret !== "function") {
        throw new TypeErrorCtor(
          `'${
            shown(ret)
          }' returned for property 'return' of object '[object Object]' is not a function`,
        );
      }
      apply(ret, this, []);
    },
    async [asyncDispose](this: AsyncIterator<unknown>): Promise<void> {
      const ret = disposeMethod(this, "return" as unknown as symbol);
      if (ret !== undefined) await apply(callable(ret), this, [undefined]);
    },
  };

  return {
    SuppressedError: SuppressedErrorFn as unknown as typeof SuppressedError,
    DisposableStack: DisposableStackFn as unknown as typeof DisposableStack,
    AsyncDisposableStack:
      AsyncDisposableStackFn as unknown as typeof AsyncDisposableStack,
    iteratorDispose: iteratorMembers[dispose] as Disposal["iteratorDispose"],
    asyncIteratorDispose: iteratorMembers[
      asyncDispose
    ] as Disposal["asyncIteratorDispose"],
  };
}
