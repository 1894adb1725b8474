/**
 * The program of a plugin realm on the `quickjs` tier: the frames and the
 * context bootstrap of the `node:vm` realm (`_realm_main.ts`), evaluated in
 * a persistent QuickJS context in a Deno child process with every
 * permission denied; a plugin that runs away costs that process. Inside,
 * QuickJS's memory limit and an interrupt handler that ends any stretch of
 * plugin code longer than `timeoutMs` hold the plugin too, so a loop the
 * host has not yet killed does not keep a core busy.
 *
 * @module
 */

import singlefileVariant from "@jitl/quickjs-singlefile-browser-release-sync";
import {
  newQuickJSWASMModuleFromVariant,
  newVariant,
  type QuickJSContext,
  type QuickJSHandle,
  type QuickJSRuntime,
  type QuickJSSyncVariant,
} from "quickjs-emscripten-core";
import { DENY_CODE_GENERATION_SOURCE } from "../realm/deny_code_generation.ts";
import {
  cappedMemory,
  guardHostCopies,
  watchGrowth,
} from "../loader/memory_growth.ts";
import {
  findAllocatorState,
  forgetFailedRequests,
  moreMemoryFailed,
} from "../loader/dlmalloc_state.ts";
import {
  CONTEXT_BOOTSTRAP_SOURCE,
  HOST_EXPORT_NAMES,
} from "./_context_bootstrap.ts";
import {
  bytesOfBase64,
  deepSourceFailureJson,
  encodeFrame,
  failureJson,
  frameDecoder,
  type FrameHandler,
  frameHooks,
  parseObject,
  textOfBase64,
} from "./_line_codec.ts";
import { permissionStates, stdoutWriter } from "./_realm_main.ts";

/** Where the realm's text goes, and how it ends when memory runs out. */
export interface QuickJSRealmEnd {
  /** Sends frames to the host. */
  write(text: string): void;
  /** Ends the realm, whose plugin reached its memory limit. */
  outOfMemory(): void;
}

/** The module that imports `cordon:host`, then the plugin. */
const MAIN_MODULE = "cordon:main";
const HOST_MODULE = "cordon:host";
/** Names the loader refuses, as the import() of the specifier that follows. */
const DYNAMIC_IMPORT_PREFIX = "cordon:import() ";
/** The global the host module takes its exports from, once. */
const HOST_EXPORTS_KEY = "cordon:host exports";
/** How much frame text waits for the end of a stretch before it is written. */
const MAX_OUTBOX_CHARS = 64 * 1024;
/** QuickJS's stack limit for plugin code, in bytes. */
const MAX_STACK_BYTES = 256 * 1024;
/** The longest stretch of plugin code before the plugin's timeoutMs is known. */
const DEFAULT_STRETCH_MS = 5000;
/** How many promise jobs run between two checks of the stretch's end. */
const JOBS_PER_STEP = 16;
// A module's text cannot come from a function: these two are declarations
// only, and run no logic of their own.
const HOST_MODULE_SOURCE = `export const { ${
  HOST_EXPORT_NAMES.join(", ")
} } = globalThis[${JSON.stringify(HOST_EXPORTS_KEY)}]();\n`;

function mainModuleSource(pluginName: string): string {
  return `import ${JSON.stringify(HOST_MODULE)};\nexport * as plugin from ${
    JSON.stringify(pluginName)
  };\n`;
}

const CONTROL_NAMES = [
  "invoke",
  "settle",
  "describe",
  "setNamespace",
  "importError",
  "hostExports",
] as const;

/** The bootstrap's functions the realm calls, as handles of the context. */
type Control = Record<typeof CONTROL_NAMES[number], QuickJSHandle>;

/** A plugin module being evaluated. */
interface Loading {
  /** The module's evaluation: its namespace, or a promise of it. */
  result: QuickJSHandle;
  /** When its evaluation must have ended, in `performance.now()` ms. */
  deadline: number;
}

/** QuickJS's memory limit when it has none. */
const NO_QUICKJS_LIMIT = -1;

/**
 * Serves one plugin realm with the frames of `_realm_main.ts`; answers go
 * to `end`.
 *
 * @returns The function that takes each chunk of the host's text.
 */
export async function serveQuickJSRealm(
  end: QuickJSRealmEnd,
  memoryLimitBytes: number,
): Promise<(chunk: string) => void> {
  // The realm's memory holds the plugin's limit above the build's start.
  const { memory, maximumBytes } = cappedMemory(memoryLimitBytes);
  const growth = watchGrowth(memory);
  const wasm = await newQuickJSWASMModuleFromVariant(
    newVariant(singlefileVariant as unknown as QuickJSSyncVariant, {
      wasmMemory: memory,
    }),
  );
  // A request, payload or answer that does not fit ends the realm as out
  // of memory, instead of landing at address 0 over the engine's state.
  const hostCopies = guardHostCopies(wasm, outOfMemory);
  // Found before any runtime exists, while the heap is all but empty; read
  // only once plugin code failed, never per call. `null` for an allocator
  // whose state the realm cannot read, which then lacks that record alone.
  const allocatorState = hostCopies === null
    ? null
    : findAllocatorState(hostCopies.raw, memory);
  let runtime: QuickJSRuntime | null = null;
  let context: QuickJSContext | null = null;
  let control: Control | null = null;
  // The context's Reflect.deleteProperty, captured before plugin code.
  let deleteProperty: QuickJSHandle | null = null;
  let loading: Loading | null = null;
  let loaded = false;
  let linking = true;
  let deniedImport: string | null = null;
  let stretchMs = DEFAULT_STRETCH_MS;
  let deadline = Infinity;
  let interrupted = false;
  // The calls taken and not yet answered: a stretch interrupted with none
  // ran plugin code that nothing waits for.
  const unanswered = new Set<number>();
  // The plugin code run with no call waiting since the last call came, and
  // when its current stretch began: its total is bounded by timeoutMs, not
  // each stretch alone, or a plugin could renew its stretch for ever
  // through host calls, each answer a chunk of its own.
  let idleSpentMs = 0;
  let idleSince = 0;
  let outbox = "";
  // Whether the outbox holds a console line.
  let lineWaiting = false;

  function send(kind: string, id: number, name: string, json: string): boolean {
    outbox += encodeFrame(kind, id, name, json);
    if ((kind === "R" || kind === "E") && unanswered.delete(id)) {
      if (unanswered.size === 0) startIdle();
    }
    if (kind === "L") lineWaiting = true;
    // Frames wait for the end of a stretch of plugin code so they leave in
    // one write; a stretch that logs in a loop would otherwise hold all of
    // its lines here until the realm's heap gives out. Lines also leave
    // from the interrupt handler (see prepare).
    if (outbox.length > MAX_OUTBOX_CHARS) writeOut();
    return true;
  }

  function writeOut(): void {
    if (outbox === "") return;
    const text = outbox;
    outbox = "";
    lineWaiting = false;
    end.write(text);
  }

  // What was logged before the plugin ran out of memory leaves first.
  function outOfMemory(): void {
    writeOut();
    end.outOfMemory();
  }

  // The bootstrap tells QuickJS's own out-of-memory error by its code: the
  // realm ends, as the other tiers' realms do.
  function classify(json: string): string {
    if (parseObject(json)?.code === "OUT_OF_MEMORY") outOfMemory();
    return json;
  }

  function primitive(handle: QuickJSHandle): unknown {
    const ctx = context!;
    const type = ctx.typeof(handle);
    if (type === "string") return ctx.getString(handle);
    if (type === "number") return ctx.getNumber(handle);
    if (type === "boolean") return ctx.sameValue(handle, ctx.true);
    return undefined;
  }

  // Calls a control function; the strings and numbers it is given become
  // handles for the call, and its result a primitive.
  function call(
    fn: QuickJSHandle,
    ...args: (string | number | boolean | QuickJSHandle)[]
  ): { ok: true; value: unknown } | { ok: false; error: QuickJSHandle } {
    const ctx = context!;
    const made: QuickJSHandle[] = [];
    const handles = args.map((arg) => {
      if (typeof arg === "object") return arg;
      if (typeof arg === "boolean") return arg ? ctx.true : ctx.false;
      const handle = typeof arg === "string"
        ? ctx.newString(arg)
        : ctx.newNumber(arg);
      made.push(handle);
      return handle;
    });
    const result = ctx.callFunction(fn, ctx.undefined, ...handles);
    for (const handle of made) handle.dispose();
    if (result.error !== undefined) return { ok: false, error: result.error };
    const value = primitive(result.value);
    result.value.dispose();
    return { ok: true, value };
  }

  // The engine's own record that plugin code met its memory limit, which
  // no code inside the memory can write: a growth refused in this stretch,
  // even one a later growth followed; the memory at its cap; or dlmalloc's
  // state saying a request for more failed, as for a block of 2 GiB or
  // more, which is refused before the memory is asked. That state also
  // tells of a failure an earlier stretch caught: one that refused a growth
  // is forgotten when the next stretch starts (see startStretch), one of 2
  // GiB or more, which nothing outside the memory sees, is not.
  function memoryRefused(): boolean {
    return growth.refusedAny || memory.buffer.byteLength >= maximumBytes ||
      (allocatorState !== null && moreMemoryFailed(memory, allocatorState));
  }

  function describe(error: QuickJSHandle): string {
    const outcome = call(control!.describe, error);
    error.dispose();
    if (outcome.ok) return String(outcome.value);
    outcome.error.dispose();
    // Describing takes memory too: once the memory refused to grow, what
    // was thrown (often not even an error, which QuickJS could not make)
    // failed for the limit, not for the plugin's code.
    if (growth.refused || memory.buffer.byteLength >= maximumBytes) {
      return failureJson("OUT_OF_MEMORY", "InternalError", "out of memory");
    }
    return failureJson(
      "GUEST_ERROR",
      "Error",
      "The plugin threw a value that cannot be described",
    );
  }

  function hostFunctions(ctx: QuickJSContext): QuickJSHandle {
    // Once a stretch is interrupted, QuickJS can still run the jobs its
    // interrupt queued: the rejection of the call that ran over would be
    // reported as the plugin's own error, and the realm kept. The host's
    // deadline ends this realm instead, as on every other tier.
    const hooks = frameHooks(
      send,
      (ok, json) => interrupted ? null : ok ? json : classify(json),
    );
    const log = hooks.log;
    // The bootstrap's console reports QuickJS's out-of-memory error as a
    // line of this level: the realm ends as the other tiers' realms do,
    // when the memory did refuse to grow. Otherwise plugin code threw an
    // error worded as QuickJS's, which the console throws on as it is.
    hooks.log = (level, text) => {
      if (level === "out-of-memory") {
        if (!memoryRefused()) return true;
        outOfMemory();
      }
      return log(level, text);
    };
    const object = ctx.newObject();
    const lend = (name: string, fn: (...args: unknown[]) => QuickJSHandle) => {
      const handle = ctx.newFunction(name, (...args) => {
        try {
          return fn(...args.map(primitive));
        } catch {
          return ctx.false;
        }
      });
      ctx.setProp(object, name, handle);
      handle.dispose();
    };
    for (const [name, fn] of Object.entries(hooks)) {
      lend(name, (...args) => fn(...args) ? ctx.true : ctx.false);
    }
    lend("memoryRefused", () => memoryRefused() ? ctx.true : ctx.false);
    // QuickJS would decode a body at some 3 µs a byte: Deno does it here.
    lend("bytesOfBase64", (text) => {
      const bytes = bytesOfBase64(String(text));
      return ctx.newArrayBuffer(bytes.buffer as ArrayBuffer);
    });
    lend("textOfBase64", (text) => {
      const decoded = textOfBase64(text);
      // quickjs-emscripten's strings end at a NUL: the context decodes those.
      return decoded === false || decoded.includes("\0")
        ? ctx.false
        : ctx.newString(decoded);
    });
    return object;
  }

  // A fresh QuickJS context with the bootstrap run and locked down.
  function prepare(initJson: string): void {
    const rt = wasm.newRuntime();
    // The memory's cap holds the limit. QuickJS's own would refuse a block
    // larger than the limit before the memory is asked, which leaves no
    // record that the limit was met (see memoryRefused), so it is lifted.
    rt.setMemoryLimit(NO_QUICKJS_LIMIT);
    rt.setMaxStackSize(MAX_STACK_BYTES);
    rt.setInterruptHandler(() => {
      // QuickJS calls this every 10,000 or so function calls and backward
      // jumps of the code it runs: console lines leave here, a few hundred
      // at a time in a flood, and at most that many calls after they were
      // logged when plugin code goes on without logging (a loop), so a
      // host that ends the realm reads them. Writing each line at once
      // cost a flood three times as much: the host read one line a time.
      if (lineWaiting) writeOut();
      // Memory at its cap, or whose cap refused growth after growth, is
      // used up: a plugin that caught QuickJS's out-of-memory error and
      // allocates on is ended here, as the other tiers end it, instead of
      // running to its deadline.
      if (memory.buffer.byteLength >= maximumBytes) outOfMemory();
      if (growth.tooOften()) outOfMemory();
      if (performance.now() <= deadline) return false;
      interrupted = true;
      return true;
    });
    const ctx = rt.newContext();
    runtime = rt;
    context = ctx;
    // The realm's own code, not plugin code: it cannot fail. Each call
    // frees the function and the arguments it is given.
    const evaluate = (source: string, name: string) =>
      ctx.unwrapResult(ctx.evalCode(source, name));
    const run = (fn: QuickJSHandle, ...args: QuickJSHandle[]) => {
      const result = ctx.callFunction(fn, ctx.undefined, ...args);
      for (const used of [fn, ...args]) used.dispose();
      return ctx.unwrapResult(result);
    };
    run(evaluate(DENY_CODE_GENERATION_SOURCE, "cordon:denial")).dispose();
    const bootstrap = evaluate(CONTEXT_BOOTSTRAP_SOURCE, "cordon:bootstrap");
    const handle = run(bootstrap, hostFunctions(ctx), ctx.newString(initJson));
    run(ctx.getProp(handle, "lockdown")).dispose();
    control = Object.fromEntries(
      CONTROL_NAMES.map((name) => [name, ctx.getProp(handle, name)]),
    ) as Control;
    handle.dispose();
    deleteProperty = ctx.getProp(ctx.global, "Reflect")
      .consume((reflect) => ctx.getProp(reflect, "deleteProperty"));
  }

  // Gives the host module its exports, once, and ends the linking phase.
  function offerHostExports(ctx: QuickJSContext): void {
    const take = ctx.newFunction("take", () => {
      linking = false;
      const key = ctx.newString(HOST_EXPORTS_KEY);
      ctx.unwrapResult(
        ctx.callFunction(deleteProperty!, ctx.undefined, ctx.global, key),
      ).dispose();
      key.dispose();
      return ctx.unwrapResult(
        ctx.callFunction(control!.hostExports, ctx.undefined),
      );
    });
    ctx.defineProp(ctx.global, HOST_EXPORTS_KEY, {
      value: take,
      configurable: true,
      enumerable: false,
    });
    take.dispose();
  }

  function moduleLoader(source: string, pluginName: string) {
    return (name: string) => {
      if (name.startsWith(DYNAMIC_IMPORT_PREFIX)) {
        // An import(): it rejects with the error the vm realm gives it.
        const ctx = context!;
        const specifier = ctx.newString(
          name.slice(DYNAMIC_IMPORT_PREFIX.length),
        );
        const result = ctx.callFunction(
          control!.importError,
          ctx.undefined,
          specifier,
        );
        specifier.dispose();
        return { error: result.error ?? result.value };
      }
      if (name === HOST_MODULE) return HOST_MODULE_SOURCE;
      if (name === pluginName) return source;
      return { error: new Error(`Cannot load ${name}`) };
    };
  }

  function moduleNormalizer(pluginName: string) {
    return (base: string, requested: string) => {
      // Plugin code runs: every import now is an import().
      if (!linking) return DYNAMIC_IMPORT_PREFIX + requested;
      if (requested === HOST_MODULE) return HOST_MODULE;
      if (base === MAIN_MODULE && requested === pluginName) return pluginName;
      deniedImport ??= requested;
      return { error: new Error(`Cannot import ${requested}`) };
    };
  }

  function loadFailed(json: string): void {
    loading?.result.dispose();
    loading = null;
    send("X", 0, "", json);
  }

  // Why the module did not load, as the JSON of the X frame.
  function failureOfLoad(error: QuickJSHandle, compiling: boolean): string {
    if (interrupted) {
      error.dispose();
      return failureJson("TIMEOUT", "TimeoutError", "");
    }
    if (deniedImport !== null) {
      error.dispose();
      return JSON.stringify({
        deniedImport: { specifier: deniedImport, attributes: false },
      });
    }
    const json = describe(error);
    const detail = parseObject(json) ?? {};
    return compiling && detail.name === "SyntaxError"
      ? failureJson(
        "GUEST_SYNTAX_ERROR",
        "SyntaxError",
        `The plugin module is not a valid ES module: ${String(detail.message)}`,
      )
      : classify(json);
  }

  // Reports the module's evaluation once it has settled.
  function checkLoad(): void {
    const current = loading;
    if (current === null) return;
    const ctx = context!;
    if (interrupted) {
      loadFailed(failureJson("TIMEOUT", "TimeoutError", ""));
      return;
    }
    const state = ctx.getPromiseState(current.result);
    if (state.type === "pending") return;
    if (state.type === "rejected") {
      loadFailed(failureOfLoad(state.error, false));
      return;
    }
    const namespace = ctx.getProp(state.value, "plugin");
    if (!state.notAPromise) state.value.dispose();
    current.result.dispose();
    loading = null;
    const summary = call(control!.setNamespace, namespace);
    namespace.dispose();
    if (!summary.ok) {
      loadFailed(classify(describe(summary.error)));
      return;
    }
    loaded = true;
    // No call waits yet: what the module left behind is plugin code run
    // with no call waiting, from now on, not from the realm's start.
    startIdle();
    send("O", 0, "", String(summary.value));
  }

  function load(message: Record<string, unknown>): void {
    const timeoutMs = Number(message.timeoutMs);
    if (Number.isFinite(timeoutMs) && timeoutMs > 0) stretchMs = timeoutMs;
    const source = String(message.source);
    const identifier = String(message.identifier);
    const pluginName = identifier.startsWith("cordon:")
      ? `plugin:${identifier}`
      : identifier;
    try {
      prepare(String(message.initJson));
    } catch (thrown) {
      loadFailed(failureJson(
        "SANDBOX_UNAVAILABLE",
        "Error",
        `Cannot prepare the plugin's QuickJS context: ${
          thrown instanceof Error ? thrown.message : String(thrown)
        }`,
      ));
      return;
    }
    const ctx = context!;
    runtime!.setModuleLoader(
      moduleLoader(source, pluginName),
      moduleNormalizer(pluginName),
    );
    offerHostExports(ctx);
    // Plugin code runs from here on: the host's deadline for it starts now,
    // so the frame leaves before evaluation can block the thread.
    send("V", 0, "", "");
    writeOut();
    deadline = performance.now() + stretchMs;
    let result: ReturnType<QuickJSContext["evalCode"]>;
    try {
      result = ctx.evalCode(mainModuleSource(pluginName), MAIN_MODULE, {
        type: "module",
      });
    } catch (thrown) {
      if (!(thrown instanceof RangeError)) throw thrown;
      // QuickJS's parser recurses on this thread's native stack, in
      // WebAssembly, and deep enough source exhausts it before QuickJS's
      // own check: the host's RangeError, not an error of the plugin. The
      // runtime is left mid-parse; the host ends a realm whose load failed.
      loadFailed(deepSourceFailureJson("QuickJS"));
      return;
    }
    if (result.error !== undefined) {
      loadFailed(failureOfLoad(result.error, true));
      return;
    }
    loading = { result: result.value, deadline };
  }

  // Plugin code from here on runs with no call waiting: what is left of
  // the idle budget bounds it.
  function startIdle(): void {
    idleSince = performance.now();
    deadline = Math.min(deadline, idleSince + stretchMs - idleSpentMs);
  }

  function failed(id: number, error: QuickJSHandle): void {
    const json = describe(error);
    // Interrupted: the host's deadline for the call ends this realm.
    if (interrupted) return;
    const detail = String(parseObject(json)?.message);
    const message = `The plugin realm failed: ${detail}`;
    send("E", id, "", failureJson("SANDBOX_CRASHED", "Error", message));
  }

  // The host sends its load once, and calls only once the load answered O;
  // settles answer the calls of a plugin that runs.
  const dispatch: FrameHandler = (kind, id, name, json) => {
    switch (kind) {
      case "I": {
        unanswered.add(id);
        // The call's own stretch: its deadline bounds the realm now.
        idleSpentMs = 0;
        deadline = performance.now() + stretchMs;
        const outcome = call(control!.invoke, id, name, json);
        if (!outcome.ok) failed(id, outcome.error);
        else if (typeof outcome.value === "string") {
          send("R", id, "", outcome.value);
        }
        // The call's answer, and its promise jobs', leave before the next
        // frame of the same chunk runs: a call there may take the whole
        // stretch, and this one's deadline would then blame it for that.
        writeOut();
        drain();
        writeOut();
        return;
      }
      case "S":
      case "F": {
        const outcome = call(control!.settle, id, kind === "S", json);
        if (!outcome.ok) outcome.error.dispose();
        return;
      }
      case "D":
        // A frame that is not a JSON object fails the load clearly.
        load(parseObject(json) ?? {});
        return;
    }
  };

  // Runs the promise jobs until none is left or the stretch is interrupted;
  // the job that ran over is dropped, the others run with the next chunk
  // unless no call waits (see the end of a chunk). A few jobs at a time: a
  // promise job takes QuickJS's interrupt as its promise's rejection and
  // returns as any job does, so one call for every job would go on to the
  // next, and a chain whose jobs queue their successor first would hold
  // the realm for ever.
  function drain(): void {
    const rt = runtime;
    if (rt === null) return;
    while (!interrupted && rt.hasPendingJob()) {
      const result = rt.executePendingJobs(JOBS_PER_STEP);
      if (result.error !== undefined) result.error.dispose();
    }
  }

  // Counts the memory's refusals anew. A refusal the last stretch caught
  // also left dlmalloc's record of a failed request, which would otherwise
  // make a later look-alike throw OUT_OF_MEMORY; the state is written only
  // then, never read, so a call costs no more.
  function startStretch(): void {
    if (growth.refusedAny && allocatorState !== null) {
      forgetFailedRequests(memory, allocatorState);
    }
    growth.reset();
  }

  const decode = frameDecoder(dispatch);
  return (chunk: string) => {
    // Each chunk starts a new stretch of plugin code, bounded by timeoutMs,
    // or with no call waiting by what is left of the idle budget; a
    // module's evaluation keeps the deadline it started with.
    interrupted = false;
    startStretch();
    deadline = loading?.deadline ?? performance.now() + stretchMs;
    if (loaded && unanswered.size === 0) startIdle();
    decode(chunk);
    // Answers that are ready leave before the promise jobs run, which may
    // take a whole stretch.
    writeOut();
    drain();
    checkLoad();
    // Left-over promise jobs that renew themselves would take every later
    // stretch up to its end: the host replaces this realm, as it does a
    // realm of the other tiers that misses the ping after an answer.
    if (loaded && unanswered.size === 0) {
      idleSpentMs += performance.now() - idleSince;
    }
    if (interrupted && loaded && unanswered.size === 0) send("T", 0, "", "");
    writeOut();
  };
}

if (import.meta.main) {
  const encoder = new TextEncoder();
  // Written at once, not queued: plugin code may hold the thread next, and
  // the answers must leave before it does. The host is gone without
  // stdout: so is the realm.
  const write = stdoutWriter(
    (bytes) => Deno.stdout.writeSync(bytes),
    () => Deno.exit(0),
  );
  const receive = await serveQuickJSRealm({
    write,
    outOfMemory() {
      Deno.stderr.writeSync(encoder.encode("out of memory\n"));
      Deno.exit(1);
    },
  }, Number(Deno.args[0]));
  write(encodeFrame("Y", 0, "", JSON.stringify(permissionStates(Deno, true))));
  const decoder = new TextDecoder();
  // Read straight into one buffer: a stream's reader costs each chunk a
  // few promises more, and under load most chunks hold one request.
  const buffer = new Uint8Array(64 * 1024);
  for (;;) {
    const n = await Deno.stdin.read(buffer);
    if (n === null) break;
    receive(decoder.decode(buffer.subarray(0, n), { stream: true }));
  }
  Deno.exit(0);
}
