/**
 * The main module of a guest worker, as a self-contained function whose
 * source the worker host turns into the worker's module.
 *
 * @module
 */

import type { createMarshallers } from "../realm/marshal.ts";
import type {
  GuestModule,
  GuestRealmSettings,
  ModuleImporter,
  prepareGuestRealm,
  RealmAnswer,
  ResultLimit,
} from "./_guest_realm.ts";
import type { JsonValue } from "../protocol/sandbox_result.ts";

/** One run, as a guest worker receives it. */
export interface WorkerRun {
  /** The marked guest module, made by the host. */
  module: GuestModule;
  /** The context passed to a default-exported function. */
  context: JsonValue;
  /** The console budget, in bytes of UTF-8. */
  maxLogBytes: number;
  /** The bound on the value's JSON text, and its refusal. */
  result: ResultLimit;
}

/**
 * How a guest worker starts, given as JSON in its name: with its run, so
 * it needs no message before it can start, or ahead of any run, to
 * receive one run as a message.
 */
export type WorkerLaunch =
  | { mode: "run"; run: WorkerRun }
  | { mode: "ready"; warmUp: WorkerRun };

/**
 * Runs inside a fresh worker, before any guest code. It reads its launch
 * from the worker's name and empties the name: that way every worker of a
 * host shares one main module, which Deno analyses once per host (a main
 * module per run would cost each run milliseconds), and a run needs no
 * message (a fresh worker's first message costs it milliseconds too).
 * Then it hardens the realm, which also takes `postMessage` away from guest
 * code, so the worker's own channel to the host carries only what this
 * function sends. Then it runs the launch's run at once, or (`ready`)
 * settles the launch's throwaway module, waits for the host's `"warm-up"`
 * message, tells the host `"loaded"` and runs the next message it receives
 * (a {@linkcode WorkerRun} as JSON text).
 * It sends `"started"`, `log` lines, then one `result` (or `too-deep`,
 * for a result nested too deep to post), after which the worker closes
 * itself, so no guest timer or promise callback runs
 * again. When the host sends `"stop"` and the worker is idle, it answers
 * `{ t: "stopped" }` and closes itself. Self-contained.
 *
 * Guest code can listen to the worker's messages and dispatch message
 * events of its own. The host's messages reach this function's listener
 * first, which keeps them from every other listener, and it ignores events
 * the runtime did not deliver (told by the `isTrusted` getter captured
 * here), so a guest can neither see a stop request nor fake one.
 *
 * @param prepare `prepareGuestRealm`, injected as source.
 * @param create `createMarshallers`, injected as source.
 * @param settings What the realm removes.
 * @param importer Imports by URL, injected as source.
 */
export function workerBootstrap(
  prepare: typeof prepareGuestRealm,
  create: typeof createMarshallers,
  settings: GuestRealmSettings,
  importer: ModuleImporter,
): void {
  const scope = globalThis as unknown as {
    name: string;
    close(): void;
    postMessage(message: unknown): void;
    addEventListener(type: string, listener: (event: Event) => void): void;
  };
  const parseJson = JSON.parse;
  const launch = parseJson(scope.name) as WorkerLaunch;
  // Guest code sees the empty name a Deno main module sees.
  scope.name = "";
  const closeSelf = scope.close.bind(scope);
  const promiseThen = Promise.prototype.then;
  const send = scope.postMessage.bind(scope);
  const listen = scope.addEventListener.bind(scope);
  const apply = Reflect.apply;
  const isTrusted = Object.getOwnPropertyDescriptor(
    Event.prototype,
    "isTrusted",
  )!.get!;
  const stopImmediatePropagation = Event.prototype.stopImmediatePropagation;
  const realm = prepare(create(), settings, importer);
  const realmFailure = {
    ok: false,
    code: "SANDBOX_CRASHED",
    name: "SandboxCrashedError",
    message:
      "The sandbox realm failed while settling the guest's answer: run the code again, and report it if it repeats",
  };
  // V8 copies a message recursively: a result nested deeper than this
  // thread's stack takes cannot be posted, and the host answers it as the
  // stack overflow it is, as it does a result it cannot rebuild.
  const RangeErrorCtor = RangeError;
  const STACK_EXHAUSTED = "Maximum call stack size exceeded";
  let received = false;
  const ignore = () => {};

  function postResult(
    post: (message: unknown) => void,
    outcome: unknown,
  ): void {
    try {
      post({ t: "result", outcome });
    } catch (thrown) {
      const deep = thrown instanceof RangeErrorCtor &&
        thrown.message === STACK_EXHAUSTED;
      post(deep ? { t: "too-deep" } : { t: "result", outcome: realmFailure });
    }
  }

  // Runs one guest, tells `post` what happens and calls `done` right after
  // the result.
  function start(
    run: WorkerRun,
    post: (message: unknown) => void = send,
    done: () => void = closeSelf,
  ): Promise<void> {
    // A string: the cheapest message to clone, on the way to guest code.
    post("started");
    const answered = realm.run(
      run.module,
      run.context,
      run.maxLogBytes,
      (level, message) => post({ t: "log", level, message }),
      run.result,
    );
    // Through the `then` captured before guest code ran, which may have
    // replaced Promise.prototype.then.
    return apply(promiseThen, answered, [
      (answer: RealmAnswer) => {
        postResult(post, answer.outcome);
        done();
      },
      () => {
        post({ t: "result", outcome: realmFailure });
        done();
      },
    ]) as Promise<void>;
  }

  // A worker started ahead runs its throwaway module through the same code
  // as a guest's, reporting nowhere, so a run does not pay for warming up
  // the module loader or compiling this code; and before its run, since
  // the realm runs one module at a time.
  const warmedUp = launch.mode === "ready"
    ? start(launch.warmUp, ignore, ignore)
    : Promise.resolve();
  let settledWarmUp = false;
  warmedUp.then(() => settledWarmUp = true);
  // Resolved by the host's warm-up message, in a worker started ahead.
  const pinged = Promise.withResolvers<void>();

  listen("message", (event: Event) => {
    if (!apply(isTrusted, event, [])) return;
    apply(stopImmediatePropagation, event, []);
    const data = (event as MessageEvent).data;
    if (data === "stop") {
      send({ t: "stopped" });
      closeSelf();
    } else if (data === "warm-up") {
      pinged.resolve();
    } else if (!received && launch.mode === "ready") {
      received = true;
      // Almost always warm by now: the host passes "loaded" on as the
      // parent's sign to send runs. Waiting on a settled promise would
      // put the run behind more promise jobs.
      const run = parseJson(data as string) as WorkerRun;
      if (settledWarmUp) start(run);
      else warmedUp.finally(() => start(run));
    }
  });

  if (launch.mode === "run") {
    received = true;
    start(launch.run);
    return;
  }
  Promise.all([warmedUp, pinged.promise]).then(() => {
    if (!received) send("loaded");
  });
}
