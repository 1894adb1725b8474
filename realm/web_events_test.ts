import assert from "node:assert/strict";
import vm from "node:vm";
import { createQuickJSLoader } from "../loader/quickjs_loader.ts";
import { EMPTY_CATALOG } from "../catalog/empty_catalog.ts";
import { realmSource } from "./realm_source.ts";
import { createWebEvents, type WebEvents } from "./web_events.ts";
import { WEB_GLOBALS_STEPS, type WebGlobalsSteps } from "./web_globals.ts";
import { inQuickJS, observe } from "./_differential_test.ts";

/** The classes a case uses: Deno's, the factory's or a realm's globals. */
type Classes = WebEvents & { DOMException: typeof DOMException };
type Case = (W: Classes) => unknown;

const text = (fn: (...args: never[]) => unknown) =>
  Function.prototype.toString.call(fn);

/** Cases whose error message is the engine's or Deno's own: class only. */
const CLASS_ONLY = new Set<Case>();
function classOnly(make: Case): Case {
  CLASS_ONLY.add(make);
  return make;
}

const CASES: Case[] = [
  // Event: construction, flags and defaults.
  (W) => {
    const e = new W.Event(
      "x",
      { bubbles: 1, cancelable: "", composed: {} } as never,
    );
    return [e.type, e.bubbles, e.cancelable, e.composed, e.isTrusted];
  },
  (W) => {
    const e = new W.Event("x");
    return [
      e.timeStamp,
      e.target,
      e.srcElement,
      e.currentTarget,
      e.eventPhase,
      e.returnValue,
      e.defaultPrevented,
      e.cancelBubble,
      e.composedPath(),
      String(e),
    ];
  },
  (W) => new W.Event(undefined as never).type,
  (W) => new W.Event(12 as never, 5 as never).type,
  classOnly((W) => (W.Event as unknown as () => unknown)()),
  (W) => new (W.Event as unknown as new () => Event)(),
  classOnly((W) => new W.Event(Symbol() as never)),
  (W) => {
    const order: string[] = [];
    const init = {};
    for (const key of ["bubbles", "cancelable", "composed"]) {
      Object.defineProperty(init, key, {
        get: () => order.push(key),
      });
    }
    new W.Event("x", init);
    return order;
  },
  (W) => [W.Event.NONE, W.Event.AT_TARGET, W.Event.prototype.BUBBLING_PHASE],
  (W) => {
    const e = new W.Event("x", { cancelable: true });
    e.preventDefault();
    const f = new W.Event("y");
    f.preventDefault();
    const g = new W.Event("z", { cancelable: true });
    g.returnValue = false;
    return [e.defaultPrevented, f.defaultPrevented, g.defaultPrevented];
  },
  (W) => {
    const e = new W.Event("x");
    e.cancelBubble = true;
    const f = new W.Event("y");
    f.stopImmediatePropagation();
    return [e.cancelBubble, f.cancelBubble];
  },
  classOnly((W) =>
    Object.getOwnPropertyDescriptor(W.Event.prototype, "type")!
      .get!.call({})
  ),
  // EventTarget: adding, removing and dispatching.
  (W) => {
    const t = new W.EventTarget();
    let seen: unknown[] = [];
    t.addEventListener("x", function (this: unknown, e) {
      seen = [
        this === t,
        e.eventPhase,
        e.currentTarget === t,
        e.target === t,
        e.composedPath().length,
      ];
    });
    const e = new W.Event("x");
    const result = t.dispatchEvent(e);
    return [result, seen, e.eventPhase, e.currentTarget, e.target === t];
  },
  (W) => {
    const t = new W.EventTarget();
    const order: string[] = [];
    t.addEventListener("x", () => order.push("b1"));
    t.addEventListener("x", () => order.push("c1"), true);
    t.addEventListener("x", () => order.push("b2"));
    t.addEventListener("x", () => order.push("c2"), { capture: true });
    t.dispatchEvent(new W.Event("x"));
    t.dispatchEvent(new W.Event("y"));
    return order;
  },
  (W) => {
    const t = new W.EventTarget();
    const e = new W.Event("x", { cancelable: true });
    t.addEventListener("x", (ev) => ev.preventDefault());
    return [t.dispatchEvent(e), e.defaultPrevented, e.returnValue];
  },
  (W) => {
    const t = new W.EventTarget();
    const e = new W.Event("x", { cancelable: true });
    t.addEventListener("x", (ev) => {
      ev.preventDefault();
      ev.returnValue = false;
    }, { passive: true });
    return [t.dispatchEvent(e), e.defaultPrevented];
  },
  (W) => {
    const t = new W.EventTarget();
    const order: unknown[] = [];
    const handler = {
      handleEvent(this: unknown, e: Event) {
        order.push(this === handler, e.type);
      },
    };
    const late: Record<string, unknown> = {};
    t.addEventListener("x", handler);
    t.addEventListener("x", late as never);
    late.handleEvent = () => order.push("late");
    t.dispatchEvent(new W.Event("x"));
    return order;
  },
  (W) => {
    const t = new W.EventTarget();
    const order: number[] = [];
    t.addEventListener("x", () => order.push(1));
    const e = new W.Event("x");
    e.stopPropagation();
    return [t.dispatchEvent(e), order, e.cancelBubble];
  },
  (W) => {
    const t = new W.EventTarget();
    const order: unknown[] = [];
    t.addEventListener("x", (e) => {
      order.push(1);
      e.stopImmediatePropagation();
      order.push(e.cancelBubble);
    });
    t.addEventListener("x", () => order.push(2));
    const e = new W.Event("x");
    t.dispatchEvent(e);
    t.dispatchEvent(e);
    return [order, e.cancelBubble];
  },
  (W) => {
    const t = new W.EventTarget();
    const order: string[] = [];
    const g = () => order.push("g");
    t.addEventListener("x", () => {
      order.push("f");
      t.removeEventListener("x", g);
      t.addEventListener("x", () => order.push("h"));
      t.addEventListener("x", g);
    });
    t.addEventListener("x", g);
    t.dispatchEvent(new W.Event("x"));
    t.dispatchEvent(new W.Event("x"));
    return order;
  },
  (W) => {
    const t = new W.EventTarget();
    const order: string[] = [];
    const f = () => {
      order.push("f");
      t.dispatchEvent(new W.Event("x"));
    };
    t.addEventListener("x", f, { once: true });
    t.dispatchEvent(new W.Event("x"));
    t.dispatchEvent(new W.Event("x"));
    return order;
  },
  (W) => {
    const t = new W.EventTarget();
    const order: number[] = [];
    const f = () => order.push(1);
    t.addEventListener("x", f);
    t.addEventListener("x", f, { once: true });
    t.addEventListener("x", f, true);
    t.dispatchEvent(new W.Event("x"));
    t.removeEventListener("x", f, { capture: true });
    t.dispatchEvent(new W.Event("x"));
    t.removeEventListener("x", f, 0 as never);
    t.dispatchEvent(new W.Event("x"));
    return order;
  },
  (W) => {
    const t = new W.EventTarget();
    const e = new W.Event("x");
    let inner: unknown;
    t.addEventListener("x", () => {
      try {
        t.dispatchEvent(e);
      } catch (error) {
        inner = [(error as Error).name, (error as Error).message];
      }
    });
    t.dispatchEvent(e);
    return [inner, t.dispatchEvent(e)];
  },
  (W) => {
    const order: string[] = [];
    const options = {};
    for (const key of ["capture", "once", "passive", "signal"]) {
      Object.defineProperty(options, key, {
        get: () => void order.push(key),
      });
    }
    const t = new W.EventTarget();
    try {
      t.addEventListener("x", () => {}, options);
    } catch (error) {
      order.push((error as Error).name);
    }
    t.removeEventListener("x", () => {}, options);
    return order;
  },
  (W) => {
    class Emitter extends W.EventTarget {
      fire() {
        return this.dispatchEvent(new W.Event("fire", { cancelable: true }));
      }
    }
    const emitter = new Emitter();
    emitter.addEventListener("fire", (e) => e.preventDefault());
    return [emitter.fire(), emitter instanceof W.EventTarget, String(emitter)];
  },
  (W) => new W.EventTarget().addEventListener("x", null),
  (W) => new W.EventTarget().addEventListener("x", () => {}, 5 as never),
  (W) => (W.EventTarget.prototype.addEventListener as () => void).call({}),
  (W) => (new W.EventTarget().addEventListener as (t: string) => void)("x"),
  (W) => (new W.EventTarget().removeEventListener as (t: string) => void)("x"),
  (W) => (new W.EventTarget().dispatchEvent as unknown as () => void)(),
  classOnly((W) => new W.EventTarget().dispatchEvent({ type: "x" } as never)),
  (W) =>
    new W.EventTarget().addEventListener("x", () => {}, {
      signal: null as never,
    }),
  (W) =>
    new W.EventTarget().addEventListener("x", () => {}, {
      signal: {} as never,
    }),
  // AbortController and AbortSignal.
  (W) => {
    const c = new W.AbortController();
    return [
      c.signal === c.signal,
      c.signal.aborted,
      c.signal.reason,
      c.signal.onabort,
      String(c),
      String(c.signal),
      c.signal instanceof W.EventTarget,
    ];
  },
  (W) => {
    const c = new W.AbortController();
    c.abort();
    const reason = c.signal.reason;
    return [
      c.signal.aborted,
      reason instanceof W.DOMException,
      reason.name,
      reason.message,
      reason.code,
    ];
  },
  (W) => {
    const c = new W.AbortController();
    c.abort(1);
    c.abort(2);
    const d = new W.AbortController();
    d.abort(null);
    return [c.signal.reason, d.signal.reason];
  },
  (W) => W.AbortSignal.abort().throwIfAborted(),
  (W) => W.AbortSignal.abort("why").throwIfAborted(),
  (W) => new W.AbortController().signal.throwIfAborted(),
  (W) => new (W.AbortSignal as unknown as new () => unknown)(),
  classOnly((W) => (W.AbortController as unknown as () => unknown)()),
  (W) => W.AbortController.prototype.abort.call({}),
  (W) =>
    Object.getOwnPropertyDescriptor(W.AbortSignal.prototype, "aborted")!.get!
      .call(new W.EventTarget()),
  (W) => {
    const c = new W.AbortController();
    const order: unknown[] = [];
    c.signal.addEventListener("abort", () => order.push("l1"));
    c.signal.onabort = () => order.push("first handler");
    c.signal.addEventListener("abort", (e) => {
      order.push(
        "l2",
        e.type,
        e.isTrusted,
        e.cancelable,
        e.target === c.signal,
      );
    });
    c.signal.onabort = function (this: unknown) {
      order.push("handler", this === c.signal);
    };
    c.abort();
    c.abort();
    return [order, typeof c.signal.onabort];
  },
  (W) => {
    const c = new W.AbortController();
    const order: string[] = [];
    c.signal.onabort = () => order.push("a");
    c.signal.onabort = null;
    c.signal.onabort = () => order.push("b");
    c.signal.addEventListener("abort", () => order.push("c"));
    c.signal.onabort = () => order.push("d");
    c.abort();
    return order;
  },
  (W) => {
    const c = new W.AbortController();
    const t = new W.EventTarget();
    const order: string[] = [];
    t.addEventListener("x", () => order.push("x"), { signal: c.signal });
    c.signal.addEventListener("abort", () => {
      order.push("abort");
      t.dispatchEvent(new W.Event("x"));
    });
    t.dispatchEvent(new W.Event("x"));
    c.abort();
    t.dispatchEvent(new W.Event("x"));
    t.addEventListener("x", () => order.push("late"), { signal: c.signal });
    t.dispatchEvent(new W.Event("x"));
    return order;
  },
  (W) => {
    const a = W.AbortSignal.abort("first");
    const b = W.AbortSignal.abort("second");
    const live = new W.AbortController().signal;
    return [
      W.AbortSignal.any([live, b, a]).reason,
      W.AbortSignal.any([]).aborted,
      W.AbortSignal.any(new Set([live]) as never).aborted,
    ];
  },
  (W) => {
    const c = new W.AbortController();
    const d = new W.AbortController();
    const a = W.AbortSignal.any([c.signal, d.signal]);
    const b = W.AbortSignal.any([a, c.signal]);
    const order: unknown[] = [];
    c.signal.onabort = () => order.push("c", a.aborted, b.aborted);
    a.onabort = () => order.push("a");
    b.onabort = () => order.push("b");
    d.abort("d first");
    c.abort("c later");
    return [order, a.reason, b.reason, c.signal.reason];
  },
  (W) => (W.AbortSignal.any as unknown as () => void)(),
  (W) => W.AbortSignal.any(5 as never),
  (W) => W.AbortSignal.any([new W.AbortController().signal, {}] as never),
  // structuredClone copies them as the plain objects they are.
  (W) => {
    const e = new W.Event("x") as Event & { own?: number };
    e.own = 1;
    const c = new W.AbortController();
    return structuredClone([e, new W.EventTarget(), c, c.signal]);
  },
];

/** Runs every case, the classes given as `W`; the answers as JSON data. */
async function run(cases: Case[], W: Classes): Promise<unknown[]> {
  const results = [];
  for (const make of cases) results.push(await observe(() => make(W)));
  return JSON.parse(JSON.stringify(results));
}

function program(cases: Case[]): string {
  return `(async () => {
  const observe = (${text(observe)});
  const cases = [${cases.map(text).join(",\n")}];
  const results = [];
  for (const make of cases) results.push(await observe(() => make(globalThis)));
  return JSON.stringify(results);
})()`;
}

/** A fresh `node:vm` context with the Web globals, as plugins get. */
function vmRealm(global: object = {}): { run(source: string): unknown } {
  function entry(steps: WebGlobalsSteps) {
    steps.installWebGlobals(steps, globalThis);
  }
  const context = vm.createContext(global);
  vm.runInContext(
    realmSource(entry, { ...WEB_GLOBALS_STEPS }, null),
    context,
  )();
  return { run: (source) => vm.runInContext(source, context) };
}

function factoryClasses(): Classes {
  return { ...createWebEvents(DOMException), DOMException };
}

/** Each case where `mine` and Deno's answer differ, beside both. */
function differences(cases: Case[], mine: unknown[], theirs: unknown[]) {
  assert.equal(mine.length, theirs.length);
  const strip = (answer: unknown) =>
    Array.isArray(answer) && answer[0] === "threw"
      ? answer.slice(0, 2)
      : answer;
  const found = [];
  for (let i = 0; i < mine.length; i++) {
    const loose = CLASS_ONLY.has(cases[i]!);
    try {
      assert.deepEqual(
        loose ? strip(mine[i]) : mine[i],
        loose ? strip(theirs[i]) : theirs[i],
      );
    } catch {
      found.push({ case: text(cases[i]!), realm: mine[i], deno: theirs[i] });
    }
  }
  return found;
}

Deno.test("createWebEvents() answers as Deno's Event, EventTarget, AbortController and AbortSignal for every case", async () => {
  const theirs = await run(CASES, globalThis as unknown as Classes);
  const mine = await run(CASES, factoryClasses());
  assert.ok(CASES.length >= 50, `${CASES.length} cases`);
  assert.deepEqual(differences(CASES, mine, theirs), []);
});

Deno.test("the events in a node:vm context and inside QuickJS answer as Deno's for every case", async () => {
  const theirs = await run(CASES, globalThis as unknown as Classes);
  const inVm = JSON.parse(await vmRealm().run(program(CASES)) as string);
  assert.deepEqual(differences(CASES, inVm, theirs), []);
  const inQuick = JSON.parse(await inQuickJS(program(CASES)));
  assert.deepEqual(differences(CASES, inQuick, theirs), []);
});
