/**
 * The program of a plugin realm: it runs off the host's thread (in a worker
 * thread or a child process), builds the plugin's vm context, links the
 * plugin module to `cordon:host` only, and answers the host's frames (see
 * `_line_codec.ts`), which arrive as port messages on a worker thread and
 * on stdin in a child process. After each chunk it runs the context's
 * pending promise jobs (the context has its own microtask queue,
 * `microtaskMode: "afterEvaluate"`) and sends what they produced in one
 * write; a console line leaves as it is logged. {@linkcode realmProgram}
 * turns it into the program's text.
 *
 * @module
 */

import { DENY_CODE_GENERATION_SOURCE } from "../realm/deny_code_generation.ts";
import { realmSource } from "../realm/realm_source.ts";
import {
  CONTEXT_BOOTSTRAP_SOURCE,
  type ContextControl,
} from "./_context_bootstrap.ts";
import {
  deepSourceFailureJson,
  encodeFrame,
  failureJson,
  frameDecoder,
  type FrameHandler,
  frameHooks,
  parseObject,
  textOfBase64,
} from "./_line_codec.ts";

/** Where a realm runs (`VmIsolation` of `vm_sandbox.ts`, `auto` aside). */
export type RealmIsolation = "thread" | "process" | "worker" | "quickjs";

/** The `node:vm` module, which the realm program imports. */
type VmApi = typeof import("node:vm");
type VmModule = import("node:vm").Module;

/** One import of a module as V8 lists it (Deno, newer Node). */
interface ModuleRequest {
  /** `"source"` or `"defer"` for a phase import; absent or `"evaluation"` else. */
  phase?: unknown;
}

/** The realm's end of the channel: text out, text in. */
interface RealmEnd {
  write(text: string): void;
  /** Takes the host's text; the realm ends when the host goes. */
  listen(onText: (text: string) => void): void;
  /**
   * Tells the process around a worker realm that call `id` began with
   * `timeoutMs` to answer (the host's `W` frame before its `I`).
   */
  began?(id: number, timeoutMs: number): void;
  /** Tells the process around a worker realm that call `id`'s answer left. */
  answered?(id: number): void;
}

/**
 * What the process around a worker realm holds the realm to itself, as
 * JSON in its first argument.
 */
export interface RealmWatch {
  /** The most the process may hold resident, or `null` for no bound. */
  residentBytes: number | null;
  /** How often the process reads its resident memory, in ms. */
  pollMs: number;
}

/** What the worker realm tells the process around it. */
type RealmNote = { began: number; timeoutMs: number } | { answered: number };

/** What the realm program reads, as JSON data. */
interface RealmData {
  isolation: RealmIsolation;
  denialSource: string;
  bootstrapSource: string;
}

/** The frame functions the realm program calls. */
const CODEC = {
  deepSourceFailureJson,
  encodeFrame,
  frameDecoder,
  frameHooks,
  failureJson,
  parseObject,
  textOfBase64,
};

/** The functions the realm program calls. */
const LIBRARY = {
  ...CODEC,
  serveRealm,
  permissionStates,
  stdoutWriter,
  threadWriter,
};

/**
 * Serves the host over `end` until it closes: loads the plugin on `D`,
 * runs invocations (`I`), settles proxy calls (`S`, `F`), and answers a ping
 * (`P`) once the plugin code before it has run, a turn it scheduled itself
 * included.
 */
export function serveRealm(
  vm: VmApi,
  end: RealmEnd,
  codec: typeof CODEC,
  data: RealmData,
): void {
  "use strict";
  const ErrorCtor = Error;
  const toText = String;
  const stringify = JSON.stringify;
  let control: ContextControl | null = null;
  let drainContext: ((timeoutMs?: number) => void) | null = null;
  let outbox = "";
  let flushQueued = false;
  // Turns of plugin code the realm scheduled itself (a refused import()'s),
  // and the pings not yet answered: a ping is answered at the end of a turn
  // that left no plugin code to run, never before such a turn, which would
  // then run with no deadline.
  let laterTurns = 0;
  let pings: number[] = [];
  // The calls whose answers wait in the outbox, for `end.answered`.
  let answered: number[] = [];

  function writeOut(): void {
    if (outbox === "") return;
    const text = outbox;
    outbox = "";
    end.write(text);
    if (answered.length === 0) return;
    const ids = answered;
    answered = [];
    for (const id of ids) end.answered!(id);
  }

  function queueFlush(): void {
    if (flushQueued) return;
    flushQueued = true;
    queueMicrotask(flushTurn);
  }

  // Sends what the turn has produced so far (the answers of calls that
  // answered at once among them), runs the context's pending jobs, then
  // sends what they queued. A job the plugin left behind may spin: the
  // answers before it have left, and the realm's budget for plugin code
  // that runs with no call waiting ends it.
  function flushTurn(): void {
    flushQueued = false;
    writeOut();
    try {
      drainContext?.();
    } catch {
      // Plugin jobs report their own failures; a drain cannot fail more.
    }
    if (laterTurns === 0) {
      for (const id of pings) outbox += codec.encodeFrame("P", id, "", "");
      pings = [];
    }
    writeOut();
  }

  function laterTurn(): void {
    laterTurns--;
    flushTurn();
  }

  function send(kind: string, id: number, name: string, json: string): boolean {
    try {
      outbox += codec.encodeFrame(kind, id, name, json);
    } catch {
      return false;
    }
    if ((kind === "R" || kind === "E") && end.answered) answered.push(id);
    // A console line leaves at once, behind the frames before it: plugin
    // code may hold the thread next (a loop, a heap running out), and a
    // host that ends the realm still reads what it wrote.
    if (kind === "L") writeOut();
    else queueFlush();
    return true;
  }

  const hooks = { ...codec.frameHooks(send), textOfBase64: codec.textOfBase64 };

  function messageOf(thrown: unknown): string {
    try {
      const text = thrown instanceof ErrorCtor
        ? thrown.message
        : toText((thrown as { message?: unknown })?.message ?? thrown);
      return text.length > 2000 ? text.slice(0, 2000) + "…" : text;
    } catch {
      return "unknown error";
    }
  }

  /**
   * The phase of the first source or defer phase import of a compiled
   * module (`"source"`, `"defer"`), or `null`. Such an import is refused
   * before linking: the phase is not the linker's to see, Deno's V8 ends
   * the whole realm process (SIGSEGV) when a source phase import is linked
   * to cordon:host, and QuickJS does not parse either, so every isolation
   * answers the same. A runtime that does not list a module's requests
   * (Node 20) does not parse phase imports either. Inside serveRealm, as
   * the realm program holds only the functions it is given.
   */
  function importPhase(module: VmModule): string | null {
    const requests = (module as { moduleRequests?: unknown }).moduleRequests;
    if (!Array.isArray(requests)) return null;
    for (const request of requests as ModuleRequest[]) {
      const phase = request?.phase;
      if (typeof phase === "string" && phase !== "evaluation") {
        return phase.slice(0, 20);
      }
    }
    return null;
  }

  function loadFailed(code: string, name: string, message: string): void {
    send("X", 0, "", codec.failureJson(code, name, message));
  }

  function prepareContext(message: Record<string, unknown>): object {
    const context = vm.createContext(Object.create(null), {
      name: `cordon plugin ${toText(message.pluginId)}`,
      codeGeneration: { strings: false, wasm: false },
      // The context's promise jobs run when the realm drains them, after
      // each chunk of messages, not on the realm's event loop.
      microtaskMode: "afterEvaluate",
    });
    const drain = new vm.Script("", { filename: "cordon:drain" });
    drainContext = (timeout) => drain.runInContext(context, { timeout });
    // The context's switch refuses code generation with the engine's
    // words; the denial says what to write instead, as the QuickJS tier's
    // does, and the lockdown freezes it with the other intrinsics.
    const deny = vm.runInContext(data.denialSource, context, {
      filename: "cordon:denial",
    }) as () => void;
    deny();
    const bootstrap = vm.runInContext(data.bootstrapSource, context, {
      filename: "cordon:bootstrap",
    }) as (...args: unknown[]) => ContextControl;
    const current = bootstrap(hooks, message.initJson);
    current.lockdown();
    control = current;
    return context;
  }

  async function load(message: Record<string, unknown>): Promise<void> {
    // Node has vm modules only behind a flag: not the plugin's fault.
    if (typeof vm.SourceTextModule !== "function") {
      loadFailed(
        "VM_MODULES_UNAVAILABLE",
        "Error",
        "Cannot load the plugin module: this runtime has no vm modules; start the host with node --experimental-vm-modules",
      );
      return;
    }
    let context: object;
    try {
      context = prepareContext(message);
    } catch (thrown) {
      loadFailed(
        "SANDBOX_UNAVAILABLE",
        "Error",
        `Cannot prepare the plugin's vm context: ${messageOf(thrown)}`,
      );
      return;
    }
    const current = control!;
    const exports = current.hostExports();
    const names = Object.keys(exports);
    let plugin: VmModule;
    let host: VmModule;
    try {
      host = new vm.SyntheticModule(names, function () {
        for (const name of names) this.setExport(name, exports[name]);
      }, { context, identifier: "cordon:host" });
      plugin = new vm.SourceTextModule(toText(message.source), {
        context,
        identifier: toText(message.identifier),
        importModuleDynamically: (specifier: unknown) => {
          // Node rejects with a promise job of the realm itself: drain the
          // context once that job has run.
          laterTurns++;
          setTimeout(laterTurn, 0);
          throw current.importError(toText(specifier));
        },
      });
    } catch (thrown) {
      // V8's parser recurses on this thread's stack, and throws the
      // context's RangeError for source nested deeper than that takes. No
      // plugin code has run yet; the control tells the engine's error by
      // identity, as it does for a plugin's own recursion.
      const detail = codec.parseObject(current.describe(thrown));
      if (detail?.code === "STACK_OVERFLOW") {
        send("X", 0, "", codec.deepSourceFailureJson("V8"));
        return;
      }
      loadFailed(
        "GUEST_SYNTAX_ERROR",
        "SyntaxError",
        `The plugin module is not a valid ES module: ${messageOf(thrown)}`,
      );
      return;
    }
    const phased = importPhase(plugin);
    if (phased !== null) {
      loadFailed(
        "GUEST_SYNTAX_ERROR",
        "SyntaxError",
        `The plugin module is not a valid ES module: it has an import ${phased} phase import, which QuickJS does not parse and this tier does not link; import cordon:host without a phase`,
      );
      return;
    }
    let denied: { specifier: string; attributes: boolean } | null = null;
    try {
      await plugin.link((specifier, _referrer, extra) => {
        // Older Node versions name them `assert`.
        const attributes = Object.keys(
          extra?.attributes ??
            (extra as { assert?: object } | undefined)?.assert ?? {},
        ).length > 0;
        if (specifier === "cordon:host" && !attributes) return host;
        denied = { specifier, attributes };
        throw new ErrorCtor("denied");
      });
    } catch (thrown) {
      if (denied !== null) {
        send("X", 0, "", stringify({ deniedImport: denied }));
      } else {
        // Only cordon:host resolves, so what fails is the module's own text:
        // a name it imports that cordon:host lacks. QuickJS finds that when
        // it compiles, as a syntax error.
        loadFailed(
          "GUEST_SYNTAX_ERROR",
          "SyntaxError",
          `Cannot link the plugin module: ${messageOf(thrown)}`,
        );
      }
      return;
    }
    // Plugin code runs from here on: the host's deadline for it starts now,
    // so the frame leaves before evaluation can block the thread.
    send("V", 0, "", "");
    writeOut();
    const timeout = Number(message.timeoutMs);
    try {
      const evaluation = plugin.evaluate({ timeout });
      // The module's promise jobs (its top-level await too) wait in the
      // context's queue; Node does not run them after evaluate(). A module
      // whose evaluation failed, by a timeout too, has none: and running a
      // context again right after a timeout ended it sometimes aborts the
      // whole process in Node 20 (a failed check in RunInContext).
      if (plugin.status !== "errored") drainContext!(timeout);
      await evaluation;
    } catch (thrown) {
      // A context whose load failed is never run again (see above).
      drainContext = null;
      // Only Node's own timeout error is an Error of this (the realm's)
      // thread; plugin values are the context's.
      if (
        thrown instanceof ErrorCtor &&
        (thrown as { code?: unknown }).code === "ERR_SCRIPT_EXECUTION_TIMEOUT"
      ) {
        loadFailed("TIMEOUT", "TimeoutError", "");
      } else send("X", 0, "", current.describe(thrown));
      return;
    }
    const summary = current.setNamespace(plugin.namespace);
    send("O", 0, "", summary);
  }

  function fail(id: number, message: string): void {
    send("E", id, "", codec.failureJson("SANDBOX_CRASHED", "Error", message));
  }

  const dispatch: FrameHandler = (kind, id, name, json) => {
    switch (kind) {
      // The host sends calls only to a realm whose load answered O.
      case "I":
        try {
          const answer = control!.invoke(id, name, json);
          if (typeof answer === "string") send("R", id, "", answer);
        } catch (thrown) {
          fail(id, `The plugin realm failed: ${messageOf(thrown)}`);
        }
        // The answer leaves before the next frame of the same read runs:
        // a call there may hold the thread, and this one's deadline would
        // then blame it for that call's loop.
        flushTurn();
        return;
      case "S":
      case "F":
        try {
          control?.settle(id, kind === "S", json);
        } catch {
          // A settle for a realm that is going away.
        }
        return;
      case "P":
        pings.push(id);
        queueFlush();
        return;
      case "W":
        end.began?.(id, Number(json));
        return;
      case "D":
        // A frame that is not a JSON object fails the load clearly.
        load(codec.parseObject(json) ?? {}).catch((thrown) =>
          loadFailed(
            "SANDBOX_CRASHED",
            "Error",
            `The plugin realm failed while loading: ${messageOf(thrown)}`,
          )
        );
        return;
    }
  };

  const decode = codec.frameDecoder(dispatch);
  end.listen((text) => {
    decode(text);
    flushTurn();
  });
}

/**
 * What a realm's Deno process may do, such as `{ read: "denied" }`. With
 * `ask`, what would prompt is requested: a realm process runs with
 * --no-prompt, where a request is refused at once.
 */
export function permissionStates(
  deno: typeof Deno,
  ask: boolean,
): Record<string, string> {
  const states: Record<string, string> = {};
  const names = ["read", "write", "net", "env", "run", "ffi", "sys"] as const;
  for (const name of names) {
    let { state } = deno.permissions.querySync({ name });
    if (state === "prompt" && ask) {
      state = deno.permissions.requestSync({ name }).state;
    }
    states[name] = state;
  }
  return states;
}

/**
 * A function that writes text to the process's stdout whole before it
 * returns, as a realm's frames leave: plugin code that holds the thread
 * next cannot keep back what was written, and a full pipe makes the realm
 * wait for the host instead of queueing text in its memory.
 *
 * @param writeSync Writes bytes to stdout, waiting while the pipe is full,
 * and answers how many it wrote: Deno's `stdout.writeSync`, or Node's
 * `fs.writeSync` on descriptor 1 (its `process.stdout` queues what a full
 * pipe does not take, in the realm's heap, so a plugin that logs in a loop
 * ran out of memory where a Deno realm waited).
 * @param onClosed Called when stdout is closed (the host is gone).
 */
export function stdoutWriter(
  writeSync: (bytes: Uint8Array) => number,
  onClosed: () => void,
): (text: string) => void {
  const encoder = new TextEncoder();
  return (text) => {
    let bytes = encoder.encode(text);
    try {
      while (bytes.length > 0) {
        bytes = bytes.subarray(writeSync(bytes));
      }
    } catch {
      onClosed();
    }
  };
}

/**
 * A function that posts text to the host of a worker thread at once, as a
 * realm's frames leave, but first waits (blocked, not spinning) while
 * `maxUnread` messages it posted are unread: `read` counts the messages
 * the host has read, and the host wakes the thread as it reads. So a
 * plugin that logs in a loop queues no more than that in the host's
 * process, as a full pipe holds back a realm process.
 */
export function threadWriter(
  post: (text: string) => void,
  read: Int32Array,
  maxUnread: number,
): (text: string) => void {
  let posted = 0;
  return (text) => {
    for (;;) {
      const seen = Atomics.load(read, 0);
      // Counts wrap around at 2 ** 31; their difference does not.
      if (((posted - seen) | 0) < maxUnread) break;
      Atomics.wait(read, 0, seen);
    }
    posted = (posted + 1) | 0;
    post(text);
  };
}

/**
 * The realm program's entry: opens its end of the channel, reports what
 * it may do, and serves the host until it closes.
 */
async function realmEntry(
  library: typeof LIBRARY,
  data: RealmData,
  importBuiltin: (specifier: string) => Promise<unknown>,
): Promise<void> {
  "use strict";
  const vm = await importBuiltin("node:vm") as VmApi;
  const deno = (globalThis as { Deno?: typeof Deno }).Deno;
  // Node's own, not the node:process module: its namespace reads every
  // property of process, which opens stdout and makes descriptor 1
  // non-blocking, where the realm's writes must wait on a full pipe.
  const process = deno === undefined
    ? (globalThis as unknown as { process: typeof import("node:process") })
      .process
    : (await importBuiltin("node:process") as {
      default: typeof import("node:process");
    }).default;
  process.on("unhandledRejection", () => {});
  // Node warns once per realm that vm modules are experimental.
  process.removeAllListeners("warning");
  // The host is gone: so is the realm.
  const close = () => process.exit(0);
  let end: RealmEnd;
  if (data.isolation === "worker") {
    const scope = globalThis as unknown as {
      onmessage: ((event: MessageEvent) => void) | null;
      postMessage(note: RealmNote): void;
    };
    end = {
      // The process's thread holds the call's deadline while this one
      // runs the plugin.
      began: (id, timeoutMs) => scope.postMessage({ began: id, timeoutMs }),
      answered: (id) => scope.postMessage({ answered: id }),
      // Straight to the process's stdout, which a worker with no
      // permissions may write: its process's thread relays only the input.
      // Without stdout the host is gone, and the process ends with its
      // input.
      write: library.stdoutWriter(
        (bytes) => deno!.stdout.writeSync(bytes),
        () => {},
      ),
      listen: (onText) => {
        scope.onmessage = (event) => {
          if (typeof event.data === "string") onText(event.data);
        };
      },
    };
  } else if (data.isolation === "thread") {
    const { parentPort, workerData } = await importBuiltin(
      "node:worker_threads",
    ) as typeof import("node:worker_threads");
    const port = parentPort!;
    const { read, maxUnread } = workerData as {
      read: Int32Array;
      maxUnread: number;
    };
    end = {
      write: library.threadWriter(
        (text) => port.postMessage(text),
        read,
        maxUnread,
      ),
      listen: (onText) => {
        port.on("message", (text: unknown) => {
          if (typeof text === "string") onText(text);
        });
        port.on("close", close);
      },
    };
  } else {
    globalThis.addEventListener?.("unhandledrejection", (event: Event) => {
      event.preventDefault();
    });
    let writeSync: (bytes: Uint8Array) => number;
    if (deno === undefined) {
      // Node's process.stdout would queue what a full pipe does not take;
      // descriptor 1 itself, which the host's spawn leaves blocking, waits.
      const fs = await importBuiltin("node:fs") as typeof import("node:fs");
      writeSync = (bytes) => fs.writeSync(1, bytes);
    } else {
      writeSync = (bytes) => deno.stdout.writeSync(bytes);
    }
    end = {
      write: library.stdoutWriter(writeSync, close),
      listen: (onText) => {
        process.stdin.setEncoding("utf8");
        process.stdin.on("data", onText);
        process.stdin.on("end", close);
      },
    };
  }
  const permissions = deno?.permissions === undefined
    ? null
    : library.permissionStates(deno, data.isolation === "process");
  end.write(library.encodeFrame("Y", 0, "", JSON.stringify(permissions)));
  library.serveRealm(vm, end, library, data);
}

/**
 * The program of the process around a worker realm: it starts the realm
 * as a Web Worker with no permissions and relays its stdin to the worker,
 * which writes to stdout itself. Killing it ends the worker for real,
 * which Deno's `worker.terminate()` does not for a worker stuck in a loop.
 *
 * Its own thread is idle while the plugin runs, so it holds the realm to
 * its watch (its first argument) itself, for a host whose event loop is
 * blocked: past its resident bound, or past the deadline of a call the
 * realm began and has not answered, it says why on stderr and exits. The
 * host still holds both, and reads why when its loop turns.
 */
async function workerHostEntry(
  _library: Record<string, never>,
  data: { realmProgram: string },
): Promise<void> {
  "use strict";
  const deno = (globalThis as { Deno?: typeof Deno }).Deno!;
  const watch = JSON.parse(deno.args[0]!) as RealmWatch;
  const bound = watch.residentBytes;
  if (bound !== null) {
    setInterval(() => {
      if (deno.memoryUsage().rss > bound) {
        console.error("realm process past its resident bound: out of memory");
        deno.exit(1);
      }
    }, watch.pollMs);
  }
  const deadlines = new Map<number, ReturnType<typeof setTimeout>>();
  const onNote = (note: RealmNote) => {
    if ("began" in note) {
      const id = note.began;
      deadlines.set(
        id,
        setTimeout(() => {
          console.error(`realm call ${id} ran past its deadline`);
          deno.exit(1);
        }, note.timeoutMs),
      );
    } else {
      clearTimeout(deadlines.get(note.answered));
      deadlines.delete(note.answered);
    }
  };
  const url = URL.createObjectURL(
    new Blob([data.realmProgram], { type: "text/javascript" }),
  );
  const worker = new Worker(url, {
    type: "module",
    deno: { permissions: "none" },
  } as WorkerOptions);
  worker.onmessage = (event: MessageEvent) => onNote(event.data);
  // A realm that fails (out of memory, say) ends its process: the host
  // sees the end and says why from the process's stderr.
  worker.onerror = (event: ErrorEvent) => {
    event.preventDefault();
    console.error(`realm worker failed: ${event.message}`);
    deno.exit(1);
  };
  const decoder = new TextDecoder();
  for await (const chunk of deno.stdin.readable) {
    worker.postMessage(decoder.decode(chunk, { stream: true }));
  }
  deno.exit(0);
}

const programs: Partial<Record<RealmIsolation | "worker-host", string>> = {};

/**
 * Names a program in stack traces. Node names a `data:` module by its whole
 * URL, so each frame of a plugin's error stack held the realm program in
 * base64 (an error's `stack` was over 1 MB, past `maxPayloadBytes`); an
 * evaluated worker's frames read `[worker eval]`. Deno shortens the URL.
 */
function named(program: string, name: string): string {
  return `${program}\n//# sourceURL=${name}\n`;
}

/** The source text of the process around a worker realm. */
export function workerHostProgram(): string {
  const data = { realmProgram: realmProgram("worker") };
  return programs["worker-host"] ??= named(
    `${realmSource(workerHostEntry, {}, data)}();`,
    "cordon:realm-host",
  );
}

/**
 * The realm program's importer of Node's built-ins, as source text: an
 * app's bundler rewrites an `import()` in a function's body into a call of
 * its own loader (Vitest's `__vite_ssr_dynamic_import__`, webpack's
 * require), which the realm, started from that function's text, lacks.
 */
const BUILTIN_IMPORTER_SOURCE = "(specifier) => import(specifier)";

/**
 * The source text of a realm program: a script that runs
 * {@linkcode serveRealm} over the channel of `isolation`.
 */
export function realmProgram(isolation: RealmIsolation): string {
  const data: RealmData = {
    isolation,
    denialSource: DENY_CODE_GENERATION_SOURCE,
    bootstrapSource: CONTEXT_BOOTSTRAP_SOURCE,
  };
  return programs[isolation] ??= named(
    `${realmSource(realmEntry, LIBRARY, data)}(${BUILTIN_IMPORTER_SOURCE});`,
    "cordon:realm",
  );
}
