// This module is browser compatible.

/**
 * `Event`, `CustomEvent`, `EventTarget`, `AbortController` and `AbortSignal` for a realm
 * whose engine has no host Web APIs (QuickJS, a `node:vm` context), after
 * the DOM Standard as Deno gives it, so that packages which read
 * `AbortController` or subclass `EventTarget` without timers or fetch run
 * as they do on the worker tier. Pure computation: nothing here reaches
 * the host. Runs inside a realm: self-contained, turned into source by
 * `realm/realm_source.ts`, and frozen by the realm's lockdown with every
 * other intrinsic.
 *
 * Where the realm differs from Deno, and why:
 *
 * - A listener that throws does not stop the dispatch: its error goes to
 *   the realm's `reportError` when the global object has one, else to
 *   `console.error` (the run's captured console), else nowhere. Deno
 *   reports it as an uncaught error.
 * - There is no `AbortSignal.timeout`: these realms have no timers either.
 * - A callback that is neither a function nor an object is a `TypeError`
 *   when it is added, as the standard says (Deno accepts it and reports
 *   a `TypeError` at each dispatch); a `null` event init is an empty one
 *   (Deno's `CustomEvent` throws on it).
 * - `timeStamp` is 0, as in Deno: no realm reads the host's clock.
 *
 * Like Deno's, the listeners at the target run in the order they were
 * added, capturing or not, and `structuredClone` copies these objects as
 * the plain objects they are (their own enumerable properties only).
 *
 * @module
 */

/** What {@linkcode createWebEvents} makes, by global name. */
export interface WebEvents {
  Event: typeof Event;
  CustomEvent: typeof CustomEvent;
  EventTarget: typeof EventTarget;
  AbortController: typeof AbortController;
  AbortSignal: typeof AbortSignal;
}

/**
 * Makes the realm's `Event`, `CustomEvent`, `EventTarget`,
 * `AbortController` and `AbortSignal`. Self-contained: it captures the intrinsics it uses when it
 * is called. Errors carry Deno's messages.
 *
 * @param DOMExceptionCtor The realm's `DOMException`, for abort reasons and
 * the error of an event dispatched twice at once.
 * @returns The five constructors, by global name.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createWebEvents } from "./web_events.ts";
 *
 * const { AbortController, EventTarget, Event } = createWebEvents(DOMException);
 * const controller = new AbortController();
 * const target = new EventTarget();
 * const seen: string[] = [];
 * target.addEventListener("ping", (event) => seen.push(event.type), {
 *   signal: controller.signal,
 * });
 * target.dispatchEvent(new Event("ping"));
 * controller.abort();
 * target.dispatchEvent(new Event("ping"));
 * assert.deepEqual(seen, ["ping"]);
 * assert.equal(controller.signal.reason.name, "AbortError");
 * ```
 */
export function createWebEvents(
  DOMExceptionCtor: new (message?: string, name?: string) => Error,
): WebEvents {
  "use strict";
  const { defineProperty, getOwnPropertyDescriptor } = Object;
  const { apply, ownKeys } = Reflect;
  const G = globalThis as unknown as Record<string, unknown>;
  const TypeErrorCtor = TypeError;
  const WeakMapCtor = WeakMap;
  const MapCtor = Map;
  const iteratorSymbol: typeof Symbol.iterator = Symbol.iterator;
  const NONE = 0, AT_TARGET = 2;

  /** An event's attributes by name, and its flags. */
  interface EventState {
    type: string;
    bubbles: boolean;
    cancelable: boolean;
    composed: boolean;
    isTrusted: boolean;
    target: object | null;
    currentTarget: object | null;
    eventPhase: number;
    defaultPrevented: boolean;
    timeStamp: number;
    /** 0, or 1 once propagation stops, or 2 once it stops immediately. */
    stop: number;
    passive: boolean;
    dispatching: boolean;
  }
  interface Listener {
    callback: object;
    capture: boolean;
    once: boolean;
    passive: boolean;
    removed: boolean;
  }
  interface SignalState {
    signal: object;
    aborted: boolean;
    reason: unknown;
    /** What aborting does before the event: removing listeners. */
    algorithms: (() => void)[];
    dependent: boolean;
    sources: SignalState[];
    /** Held strongly: a dependent that has listeners must stay alive. */
    dependents: SignalState[];
    handler: unknown;
    handlerListener: ((event: Event) => void) | null;
  }

  // Internal state lives in weak maps rather than private fields, so no
  // bundler rewrites it into helpers outside this self-contained function.
  const events = new WeakMapCtor<object, EventState>();
  const targets = new WeakMapCtor<object, Map<string, Listener[]>>();
  const signalStates = new WeakMapCtor<object, SignalState>();
  const controllers = new WeakMapCtor<object, AbortSignal>();
  function stateOf<T>(map: WeakMap<object, T>, value: unknown): T {
    const state = map.get(value as object);
    if (state === undefined) throw new TypeErrorCtor("Illegal invocation");
    return state;
  }
  const isObject = (value: unknown): value is Record<string, unknown> =>
    (typeof value === "object" && value !== null) ||
    typeof value === "function";
  function requireArguments(count: number, need: number, context: string) {
    if (count < need) {
      throw new TypeErrorCtor(
        `Failed to ${context}: ${need} argument${
          need > 1 ? "s" : ""
        } required, but only ${count} present`,
      );
    }
  }

  function report(error: unknown): void {
    try {
      const reportError = G.reportError;
      if (typeof reportError === "function") reportError(error);
      else (G.console as Console).error(error);
    } catch {
      // A broken or absent console must not end the dispatch.
    }
  }

  const EventClass = class Event {
    constructor(type: unknown, eventInitDict: unknown = undefined) {
      requireArguments(arguments.length, 1, "construct 'Event'");
      const init = (eventInitDict ?? {}) as Record<string, unknown>;
      events.set(this, {
        type: `${type}`,
        bubbles: !!init.bubbles,
        cancelable: !!init.cancelable,
        composed: !!init.composed,
        isTrusted: false,
        target: null,
        currentTarget: null,
        eventPhase: NONE,
        stop: 0,
        defaultPrevented: false,
        passive: false,
        dispatching: false,
        timeStamp: 0,
      });
    }
    get srcElement(): EventTarget | null {
      return stateOf(events, this).target as EventTarget | null;
    }
    composedPath(): EventTarget[] {
      const { currentTarget } = stateOf(events, this);
      return currentTarget === null ? [] : [currentTarget as EventTarget];
    }
    stopPropagation(): void {
      const state = stateOf(events, this);
      if (state.stop === 0) state.stop = 1;
    }
    get cancelBubble(): boolean {
      return stateOf(events, this).stop !== 0;
    }
    set cancelBubble(value: boolean) {
      if (value) this.stopPropagation();
    }
    stopImmediatePropagation(): void {
      stateOf(events, this).stop = 2;
    }
    get returnValue(): boolean {
      return !stateOf(events, this).defaultPrevented;
    }
    set returnValue(value: boolean) {
      if (!value) cancel(stateOf(events, this));
    }
    preventDefault(): void {
      cancel(stateOf(events, this));
    }
  };
  /** Read-only attributes, each the state's field of its name. */
  function defineAttributes(
    proto: object,
    map: WeakMap<object, object>,
    names: string[],
  ): void {
    for (const name of names) {
      const { get } = getOwnPropertyDescriptor({
        get [name]() {
          return (stateOf(map, this) as Record<string, unknown>)[name];
        },
      }, name)!;
      defineProperty(proto, name, {
        get,
        enumerable: true,
        configurable: true,
      });
    }
  }
  defineAttributes(EventClass.prototype, events, [
    "type",
    "target",
    "currentTarget",
    "eventPhase",
    "bubbles",
    "cancelable",
    "defaultPrevented",
    "composed",
    "timeStamp",
    "isTrusted",
  ]);
  function cancel(state: EventState): void {
    if (state.cancelable && !state.passive) state.defaultPrevented = true;
  }
  const PHASES = ["NONE", "CAPTURING_PHASE", "AT_TARGET", "BUBBLING_PHASE"];
  for (let phase = 0; phase < 4; phase++) {
    for (const target of [EventClass, EventClass.prototype]) {
      defineProperty(target, PHASES[phase]!, {
        value: phase,
        enumerable: true,
      });
    }
  }

  // `detail` belongs to CustomEvent alone, so it stays out of EventState.
  const details = new WeakMapCtor<object, { detail: unknown }>();
  const CustomEventClass = class CustomEvent extends EventClass {
    constructor(type: unknown, eventInitDict: unknown = undefined) {
      requireArguments(arguments.length, 1, "construct 'CustomEvent'");
      super(type, eventInitDict);
      const init = (eventInitDict ?? {}) as Record<string, unknown>;
      details.set(this, { detail: init.detail ?? null });
    }
  };
  defineAttributes(CustomEventClass.prototype, details, ["detail"]);

  /** Web IDL's `boolean or EventListenerOptions`: its `capture`. */
  function captureOf(options: unknown): boolean {
    return isObject(options) ? !!options.capture : !!options;
  }

  function listenersOf(target: object, type: string): Listener[] {
    const byType = stateOf(targets, target);
    let list = byType.get(type);
    if (list === undefined) byType.set(type, list = []);
    return list;
  }

  function removeListener(
    target: object,
    type: string,
    callback: unknown,
    capture: boolean,
  ): void {
    const list = listenersOf(target, type);
    for (let i = 0; i < list.length; i++) {
      const listener = list[i]!;
      if (listener.callback === callback && listener.capture === capture) {
        listener.removed = true;
        list.splice(i, 1);
        return;
      }
    }
  }

  function addListener(
    target: object,
    type: string,
    callback: object,
    options: unknown,
  ): void {
    const prefix = "Failed to execute 'addEventListener' on 'EventTarget'";
    const capture = captureOf(options);
    let once = false, passive = false, signal: SignalState | undefined;
    if (isObject(options)) {
      once = !!options.once;
      passive = !!options.passive;
      if (options.signal !== undefined) {
        signal = signalStates.get(options.signal as object);
        if (signal === undefined) {
          throw new TypeErrorCtor(
            `${prefix}: 'signal' of 'AddEventListenerOptions' (Argument 3) is not of type AbortSignal`,
          );
        }
      }
    }
    if (!isObject(callback)) {
      if (callback === null) return;
      throw new TypeErrorCtor(
        `${prefix}: The callback provided as parameter 2 is not an object`,
      );
    }
    if (signal?.aborted) return;
    const list = listenersOf(target, type);
    for (const listener of list) {
      if (listener.callback === callback && listener.capture === capture) {
        return;
      }
    }
    list.push({ callback, capture, once, passive, removed: false });
    signal?.algorithms.push(() =>
      removeListener(target, type, callback, capture)
    );
  }

  function invoke(listener: Listener, event: Event, target: object): void {
    const { callback } = listener;
    try {
      if (typeof callback === "function") {
        apply(callback, target, [event]);
        return;
      }
      const handleEvent = (callback as EventListenerObject).handleEvent;
      if (typeof handleEvent !== "function") {
        throw new TypeErrorCtor("'handleEvent' property is not callable");
      }
      apply(handleEvent, callback, [event]);
    } catch (error) {
      report(error);
    }
  }

  /** The DOM's dispatch, on a target without parents. */
  function dispatch(target: object, event: Event): boolean {
    const state = stateOf(events, event);
    if (state.dispatching) {
      throw new DOMExceptionCtor("Invalid event state", "InvalidStateError");
    }
    state.dispatching = true;
    state.target = state.currentTarget = target;
    state.eventPhase = AT_TARGET;
    try {
      // Listeners added during the dispatch wait for the next one.
      const list = state.stop === 0 ? [...listenersOf(target, state.type)] : [];
      for (const listener of list) {
        if (listener.removed) continue;
        if (listener.once) {
          removeListener(
            target,
            state.type,
            listener.callback,
            listener.capture,
          );
        }
        state.passive = listener.passive;
        invoke(listener, event, target);
        state.passive = false;
        if (state.stop === 2) break;
      }
    } finally {
      state.currentTarget = null;
      state.eventPhase = NONE;
      state.stop = 0;
      state.dispatching = false;
    }
    return !state.defaultPrevented;
  }

  const EventTargetClass = class EventTarget {
    constructor() {
      targets.set(this, new MapCtor());
    }
    addEventListener(
      type: unknown,
      callback: unknown,
      options: unknown = undefined,
    ): void {
      stateOf(targets, this);
      requireArguments(
        arguments.length,
        2,
        "execute 'addEventListener' on 'EventTarget'",
      );
      addListener(this, `${type}`, callback as object, options);
    }
    removeEventListener(
      type: unknown,
      callback: unknown,
      options: unknown = undefined,
    ): void {
      stateOf(targets, this);
      requireArguments(
        arguments.length,
        2,
        "execute 'removeEventListener' on 'EventTarget'",
      );
      removeListener(this, `${type}`, callback, captureOf(options));
    }
    dispatchEvent(event: unknown): boolean {
      stateOf(targets, this);
      requireArguments(
        arguments.length,
        1,
        "execute 'dispatchEvent' on 'EventTarget'",
      );
      if (!events.has(event as object)) {
        throw new TypeErrorCtor(
          "Failed to execute 'dispatchEvent' on 'EventTarget': parameter 1 is not of type 'Event'",
        );
      }
      return dispatch(this, event as Event);
    }
  };

  // A token only this code holds: without it, `new AbortSignal()` throws.
  const CREATE = {};
  function newSignal(): AbortSignal {
    return new AbortSignalClass(CREATE) as unknown as AbortSignal;
  }
  function abortReason(reason: unknown): unknown {
    return reason === undefined
      ? new DOMExceptionCtor("The signal has been aborted", "AbortError")
      : reason;
  }

  /** The DOM's "signal abort": its dependents abort with it. */
  function signalAbort(signal: AbortSignal, reason: unknown): void {
    const state = stateOf(signalStates, signal);
    if (state.aborted) return;
    state.aborted = true;
    state.reason = abortReason(reason);
    const aborting = [state];
    for (const dependent of state.dependents) {
      if (dependent.aborted) continue;
      dependent.aborted = true;
      dependent.reason = state.reason;
      aborting.push(dependent);
    }
    for (const each of aborting) {
      const algorithms = each.algorithms;
      each.algorithms = [];
      each.dependents = each.sources = [];
      for (const algorithm of algorithms) algorithm();
      const event = new EventClass("abort");
      stateOf(events, event).isTrusted = true;
      dispatch(each.signal, event as Event);
    }
  }

  const AbortSignalClass = class AbortSignal extends EventTargetClass {
    constructor(token: unknown = undefined) {
      if (token !== CREATE) throw new TypeErrorCtor("Illegal constructor");
      super();
      signalStates.set(this, {
        signal: this,
        aborted: false,
        reason: undefined,
        algorithms: [],
        dependent: false,
        sources: [],
        dependents: [],
        handler: null,
        handlerListener: null,
      });
    }
    static abort(reason: unknown = undefined): AbortSignal {
      const signal = newSignal();
      const state = stateOf(signalStates, signal);
      state.aborted = true;
      state.reason = abortReason(reason);
      return signal;
    }
    static any(signals: unknown): AbortSignal {
      const prefix = "Failed to execute 'AbortSignal.any'";
      requireArguments(arguments.length, 1, "execute 'AbortSignal.any'");
      const iterable = signals as Iterable<unknown>;
      if (
        !isObject(iterable) || typeof iterable[iteratorSymbol] !== "function"
      ) {
        throw new TypeErrorCtor(
          `${prefix}: Argument 1 can not be converted to sequence.`,
        );
      }
      const given: SignalState[] = [];
      for (const item of iterable) {
        const state = signalStates.get(item as object);
        if (state === undefined) {
          throw new TypeErrorCtor(
            `${prefix}: Argument 1, index ${given.length} is not of type AbortSignal`,
          );
        }
        given.push(state);
      }
      for (const state of given) {
        if (state.aborted) return AbortSignalClass.abort(state.reason);
      }
      const result = newSignal();
      const resultState = stateOf(signalStates, result);
      resultState.dependent = true;
      for (const state of given) {
        for (const source of state.dependent ? state.sources : [state]) {
          if (resultState.sources.includes(source)) continue;
          resultState.sources.push(source);
          source.dependents.push(resultState);
        }
      }
      return result;
    }
    throwIfAborted(): void {
      const state = stateOf(signalStates, this);
      if (state.aborted) throw state.reason;
    }
    get onabort(): unknown {
      return stateOf(signalStates, this).handler;
    }
    set onabort(value: unknown) {
      const state = stateOf(signalStates, this);
      state.handler = isObject(value) ? value : null;
      // An event handler keeps the place its first listener took.
      if (state.handler !== null && state.handlerListener === null) {
        state.handlerListener = function (this: unknown, event: Event) {
          apply(state.handler as () => void, this, [event]);
        };
        addListener(this, "abort", state.handlerListener, false);
      } else if (state.handler === null && state.handlerListener !== null) {
        removeListener(this, "abort", state.handlerListener, false);
        state.handlerListener = null;
      }
    }
  };
  defineAttributes(AbortSignalClass.prototype, signalStates, [
    "aborted",
    "reason",
  ]);

  const AbortControllerClass = class AbortController {
    constructor() {
      controllers.set(this, newSignal());
    }
    get signal(): AbortSignal {
      return stateOf(controllers, this);
    }
    abort(reason: unknown = undefined): void {
      signalAbort(stateOf(controllers, this), reason);
    }
  };

  // Members as Web IDL lays them out: enumerable, with the platform's tags.
  // Names come from literals: a minifier renames the classes themselves.
  const classes = [
    [EventClass, "Event"],
    [CustomEventClass, "CustomEvent"],
    [EventTargetClass, "EventTarget"],
    [AbortSignalClass, "AbortSignal"],
    [AbortControllerClass, "AbortController"],
  ] as const;
  for (const [ctor, name] of classes) {
    for (const object of [ctor, ctor.prototype]) {
      for (const key of ownKeys(object)) {
        if (key === "constructor" || key === "prototype") continue;
        const descriptor = getOwnPropertyDescriptor(object, key)!;
        if (!descriptor.configurable) continue;
        if (object === ctor && (key === "length" || key === "name")) continue;
        descriptor.enumerable = true;
        defineProperty(object, key, descriptor);
      }
    }
    defineProperty(ctor, "name", { value: name });
    defineProperty(ctor.prototype, Symbol.toStringTag, {
      value: name,
      configurable: true,
    });
  }

  return {
    Event: EventClass as unknown as typeof Event,
    CustomEvent: CustomEventClass as unknown as typeof CustomEvent,
    EventTarget: EventTargetClass as unknown as typeof EventTarget,
    AbortController: AbortControllerClass as unknown as typeof AbortController,
    AbortSignal: AbortSignalClass as unknown as typeof AbortSignal,
  };
}
