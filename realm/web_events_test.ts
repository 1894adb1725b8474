import assert from "node:assert/strict";
import { createQuickJSLoader } from "../loader/quickjs_loader.ts";
import { EMPTY_CATALOG } from "../catalog/empty_catalog.ts";
import { createWebEvents, type WebEvents } from "./web_events.ts";
import {
  differences,
  functionText as text,
  inQuickJS,
  observe,
  webGlobalsVmRealm as vmRealm,
} from "./_differential_test.ts";

/** The classes a case uses: Deno's, the factory's or a realm's globals. */
type Classes = WebEvents & { DOMException: typeof DOMException };
type Case = (W: Classes) => unknown;

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
  // CustomEvent: detail, its defaults, and the init read as Web IDL does.
  (W) => {
    const e = new W.CustomEvent("x", { detail: { a: [1] }, cancelable: true });
    return [e.detail, e.type, e.cancelable, e instanceof W.Event, String(e)];
  },
  (W) => [
    new W.CustomEvent("x", { detail: 0 }).detail,
    Object.keys(new W.CustomEvent("x", { detail: 1 })),
  ],
  (W) => new (W.CustomEvent as unknown as new () => Event)(),
  classOnly((W) => (W.CustomEvent as unknown as () => unknown)()),
  classOnly((W) =>
    Object.getOwnPropertyDescriptor(W.CustomEvent.prototype, "detail")!.get!
      .call(new W.Event("x"))
  ),
  (W) => {
    const order: string[] = [];
    const init = {};
    for (const key of ["detail", "composed", "bubbles", "cancelable"]) {
      Object.defineProperty(init, key, { get: () => order.push(key) });
    }
    new W.CustomEvent("x", init);
    return order;
  },
  (W) => {
    const t = new W.EventTarget();
    const seen: unknown[] = [];
    t.addEventListener("x", (event) => {
      seen.push((event as CustomEvent).detail, event.target === t);
      event.preventDefault();
    });
    const e = new W.CustomEvent("x", { detail: "d", cancelable: true });
    return [t.dispatchEvent(e), seen, e.defaultPrevented];
  },
  (W) => structuredClone(new W.CustomEvent("x", { detail: { a: 1 } })),
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

function factoryClasses(): Classes {
  return { ...createWebEvents(DOMException), DOMException };
}

Deno.test("createWebEvents() answers as Deno's Event, CustomEvent, EventTarget, AbortController and AbortSignal for every case", async () => {
  const theirs = await run(CASES, globalThis as unknown as Classes);
  const mine = await run(CASES, factoryClasses());
  assert.ok(CASES.length >= 50, `${CASES.length} cases`);
  assert.deepEqual(differences(CASES, mine, theirs, CLASS_ONLY), []);
});

Deno.test("the events in a node:vm context and inside QuickJS answer as Deno's for every case", async () => {
  const theirs = await run(CASES, globalThis as unknown as Classes);
  const inVm = JSON.parse(await vmRealm().run(program(CASES)) as string);
  assert.deepEqual(differences(CASES, inVm, theirs, CLASS_ONLY), []);
  const inQuick = JSON.parse(await inQuickJS(program(CASES)));
  assert.deepEqual(differences(CASES, inQuick, theirs, CLASS_ONLY), []);
});

/** One step of a fuzz program, as data. */
type Step =
  | ["add", number, number, boolean, boolean, boolean, number]
  | ["remove", number, number, boolean]
  | ["dispatch", number, boolean]
  | ["abort", number];

/**
 * Runs each program on a fresh target with two controllers; four
 * callbacks (the last a `handleEvent` object) log each call and then do
 * their program's reaction, which may itself be a step. Self-contained:
 * it runs in Deno, in a `node:vm` context and in QuickJS.
 */
function fuzzRun(W: Classes, programs: [Step[], (Step | string)[]][]) {
  const TYPES = ["a", "b"];
  return programs.map(([steps, reactions]) => {
    const log: unknown[] = [];
    const target = new W.EventTarget();
    const controllers = [new W.AbortController(), new W.AbortController()];
    let depth = 0;
    const callbacks: EventListenerOrEventListenerObject[] = [];
    const react = (index: number, event: Event) => {
      log.push(index, event.type, event.defaultPrevented);
      const reaction = reactions[index]!;
      if (reaction === "stop") event.stopImmediatePropagation();
      else if (reaction === "prevent") event.preventDefault();
      else if (typeof reaction !== "string" && depth < 2) perform(reaction);
    };
    for (let i = 0; i < 3; i++) callbacks.push((event) => react(i, event));
    callbacks.push({ handleEvent: (event) => react(3, event) });
    const signalOf = (index: number) =>
      index < 0 ? undefined : controllers[index]!.signal;
    function perform(step: Step) {
      switch (step[0]) {
        case "add": {
          const [, type, callback, capture, once, passive, signal] = step;
          const options = { capture, once, passive, signal: signalOf(signal) };
          target.addEventListener(TYPES[type]!, callbacks[callback]!, options);
          break;
        }
        case "remove":
          target.removeEventListener(
            TYPES[step[1]]!,
            callbacks[step[2]]!,
            step[3],
          );
          break;
        case "dispatch": {
          depth++;
          const event = new W.Event(TYPES[step[1]]!, { cancelable: step[2] });
          try {
            log.push("=", target.dispatchEvent(event));
          } finally {
            depth--;
          }
          break;
        }
        default:
          controllers[step[1]]!.abort(step[1]);
      }
    }
    for (const step of steps) perform(step);
    return log;
  });
}

function randomPrograms(count: number, seed: number) {
  let state = seed >>> 0;
  const next = (below: number) => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state % below;
  };
  const bit = () => next(2) === 1;
  const step = (): Step => {
    const pick = next(10);
    if (pick < 5) {
      const signal = next(4) < 2 ? -1 : next(2);
      return ["add", next(2), next(4), bit(), next(4) === 0, bit(), signal];
    }
    if (pick < 6) return ["remove", next(2), next(4), bit()];
    if (pick < 9) return ["dispatch", next(2), bit()];
    return ["abort", next(2)];
  };
  // Removals during a dispatch are the subtle case: they come often.
  const reaction = (): Step | string => {
    const pick = next(6);
    if (pick < 3) return ["none", "stop", "prevent"][pick]!;
    return pick === 3 ? step() : ["remove", next(2), next(4), bit()];
  };
  return Array.from({ length: count }, () =>
    [
      Array.from({ length: 6 + next(14) }, step),
      Array.from({ length: 4 }, reaction),
    ] as [Step[], (Step | string)[]]);
}

function fuzzProgram(programs: unknown): string {
  return `JSON.stringify((${text(fuzzRun)})(globalThis, ${
    JSON.stringify(programs)
  }))`;
}

Deno.test("seeded add, remove, once, signal and dispatch programs log as on Deno's EventTarget, from the factory, in node:vm and in QuickJS", async () => {
  const programs = randomPrograms(600, 20260615);
  const theirs = JSON.parse(
    JSON.stringify(fuzzRun(globalThis as unknown as Classes, programs)),
  );
  const log = theirs.flat();
  const dispatches = log.filter((item: unknown) => item === "=").length;
  const calls = log.filter((item: unknown) => typeof item === "number").length;
  assert.ok(dispatches > 1800 && calls > 1200, `${dispatches}, ${calls}`);
  const compare = (mine: unknown[], where: string) => {
    for (let i = 0; i < programs.length; i++) {
      assert.deepEqual(
        mine[i],
        theirs[i],
        `${where}: ${JSON.stringify(programs[i])}`,
      );
    }
  };
  compare(fuzzRun(factoryClasses(), programs), "factory");
  compare(JSON.parse(vmRealm().run(fuzzProgram(programs)) as string), "vm");
  compare(JSON.parse(await inQuickJS(fuzzProgram(programs))), "QuickJS");
});

/** Members Deno adds beyond the DOM Standard, and `timeout` (no timers). */
const DENO_ONLY = new Set([
  "Event.prototype.initialized",
  "EventTarget.prototype.getParent",
  "AbortSignal.prototype.addEventListener",
  "AbortSignal.prototype.removeEventListener",
  "AbortSignal.timeout",
]);

/** Each member: its kind and length, and whether it is enumerable. */
function layout(W: Classes): string[] {
  const rows: string[] = [];
  for (
    const name of [
      "Event",
      "CustomEvent",
      "EventTarget",
      "AbortController",
      "AbortSignal",
    ]
  ) {
    const ctor = W[name as keyof WebEvents];
    for (
      const [path, object] of [[name, ctor], [
        `${name}.prototype`,
        ctor.prototype,
      ]]
    ) {
      for (const key of Object.getOwnPropertyNames(object)) {
        if (DENO_ONLY.has(`${path}.${key}`)) continue;
        const d = Object.getOwnPropertyDescriptor(object, key)!;
        const kind = typeof d.value === "function"
          ? `method ${d.value.length}`
          : d.get
          ? `get${d.set ? "/set" : ""}`
          : typeof d.value;
        rows.push(`${path}.${key}: ${kind}`);
      }
      const tag = Object.getOwnPropertyDescriptor(object, Symbol.toStringTag);
      if (tag) rows.push(`${path}[@@toStringTag]: ${tag.value}`);
    }
    rows.push(`${name} extends ${Object.getPrototypeOf(ctor).name}`);
  }
  return rows.sort();
}

Deno.test("the classes have Deno's members, tags and chain; lengths and constants follow Web IDL where Deno's do not", () => {
  const mine = layout(factoryClasses());
  const standard = (row: string) =>
    row
      .replace(
        /^(EventTarget\.prototype\.\w+EventListener): method 3$/,
        "$1: method 2",
      )
      .replace(
        /^(AbortController\.prototype\.abort): method 1$/,
        "$1: method 0",
      )
      .replace(/^(Event\.prototype\.[A-Z_]+): get$/, "$1: number")
      .replace(/^(Event\.prototype\.srcElement): get\/set$/, "$1: get");
  // Web IDL gives each interface's prototype its own tag; Deno's
  // CustomEvent.prototype inherits Event's.
  const denoRows = layout(globalThis as unknown as Classes).map(standard);
  denoRows.push("CustomEvent.prototype[@@toStringTag]: CustomEvent");
  assert.deepEqual(mine, denoRows.sort());
  assert.ok(mine.includes("AbortSignal extends EventTarget"));
  assert.ok(mine.includes("CustomEvent extends Event"));
  const proto = Object.getOwnPropertyDescriptors(
    factoryClasses().Event.prototype,
  );
  assert.deepEqual(
    [
      proto.type!.enumerable,
      proto.preventDefault!.enumerable,
      proto.NONE!.writable,
    ],
    [true, true, false],
  );
});

Deno.test("where Deno leaves the DOM Standard, the events follow the standard", () => {
  const W = factoryClasses();
  const target = new W.EventTarget();
  assert.throws(() => target.addEventListener("x", 5 as never), {
    name: "TypeError",
    message:
      "Failed to execute 'addEventListener' on 'EventTarget': The callback provided as parameter 2 is not an object",
  });
  assert.equal(new W.Event("x", null as never).bubbles, false);
  // CustomEventInit's detail defaults to null (Deno leaves it undefined,
  // and throws on a null init).
  assert.equal(new W.CustomEvent("x").detail, null);
  assert.equal(new W.CustomEvent("x", { detail: undefined }).detail, null);
  assert.equal(new W.CustomEvent("x", null as never).detail, null);
  // A handler set to a non-object is removed, and a new one goes last.
  const controller = new W.AbortController();
  const order: string[] = [];
  controller.signal.onabort = () => order.push("old place");
  controller.signal.addEventListener("abort", () => order.push("listener"));
  controller.signal.onabort = 5 as never;
  assert.equal(controller.signal.onabort, null);
  controller.signal.onabort = () => order.push("handler");
  controller.abort();
  assert.deepEqual(order, ["listener", "handler"]);
});

Deno.test("a listener that throws is reported to the realm's console.error and the dispatch goes on, in node:vm and in QuickJS", async () => {
  const reported: string[] = [];
  const console = { error: (error: Error) => reported.push(error.message) };
  const realm = vmRealm({ console });
  const source = `(() => {
  const target = new EventTarget();
  const order = [];
  target.addEventListener("x", () => { throw new Error("boom"); });
  target.addEventListener("x", {});
  target.addEventListener("x", () => order.push("after"));
  return [target.dispatchEvent(new Event("x")), order].join();
})()`;
  assert.equal(realm.run(source), "true,after");
  assert.deepEqual(reported, [
    "boom",
    "'handleEvent' property is not callable",
  ]);
  using loader = await createQuickJSLoader({ catalog: EMPTY_CATALOG });
  const result = await loader.run({ source: `export default ${source};` });
  assert.ok(result.ok, JSON.stringify(result));
  assert.equal(result.value, "true,after");
  assert.deepEqual(result.logs.map((entry) => entry.level), ["error", "error"]);
  assert.match(result.logs[0]!.message, /boom/);
});

Deno.test("inside QuickJS the events are frozen, AbortSignal has no timeout, and a new controller's signal is not aborted", async () => {
  const answer = await inQuickJS(`JSON.stringify([
    [Event, CustomEvent, EventTarget, AbortController, AbortSignal].every((C) =>
      Object.isFrozen(C) && Object.isFrozen(C.prototype)),
    "timeout" in AbortSignal, typeof setTimeout,
    new AbortController().signal.aborted === false,
  ])`);
  assert.deepEqual(JSON.parse(answer), [true, false, "undefined", true]);
});
