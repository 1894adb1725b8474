/**
 * The program of a plugin realm: it runs off the host's thread (in a worker
 * thread or a child process), builds the plugin's vm context, links the
 * plugin module to `cordon:host` only, and answers the host's messages. The
 * function is self-contained: the host sends its source text, never a
 * closure.
 *
 * Once the plugin is loaded the realm blocks its thread while it waits for
 * the host (a blocking read of stdin, or `Atomics.wait` on a worker), so a
 * message wakes it directly instead of going through the event loop and its
 * stream layers. That works because the context has its own microtask
 * queue (`microtaskMode: "afterEvaluate"`), which the realm drains after
 * every batch of messages: plugin promise jobs never wait for an event loop
 * turn.
 *
 * @module
 */

import { createMarshallers } from "../realm/marshal.ts";
import type { RealmChannel } from "./_realm_channel.ts";
import {
  CONTEXT_BOOTSTRAP_SOURCE,
  HOST_EXPORT_NAMES,
} from "./_context_bootstrap.ts";
import { encodeFrame, frameDecoder } from "./_line_codec.ts";
import type { ContextControl } from "./_context_bootstrap.ts";
import { sharedMailbox, spinWait, waitForChange } from "./_shared_mailbox.ts";
import {
  FILE_SLOT_BYTES,
  fileCells,
  fileChannel,
  pipeIo,
  REALM_SPIN_MS,
} from "./_file_channel.ts";

/** The parts of `node:vm` the realm uses. */
interface VmApi {
  createContext(
    sandbox: object,
    options: Record<string, unknown>,
  ): object;
  runInContext(
    code: string,
    context: object,
    options: Record<string, unknown>,
  ): unknown;
  Script: new (
    code: string,
    options: Record<string, unknown>,
  ) => {
    runInContext(context: object, options?: Record<string, unknown>): unknown;
  };
  SourceTextModule: new (
    source: string,
    options: Record<string, unknown>,
  ) => VmModule;
  SyntheticModule: new (
    names: string[],
    evaluate: (this: { setExport(n: string, v: unknown): void }) => void,
    options: Record<string, unknown>,
  ) => VmModule;
}

interface VmModule {
  link(
    linker: (
      specifier: string,
      referrer: unknown,
      extra: { attributes?: object; assert?: object } | undefined,
    ) => VmModule | Promise<VmModule>,
  ): Promise<void>;
  evaluate(options?: Record<string, unknown>): Promise<void>;
  readonly namespace: unknown;
}

/**
 * Runs a plugin realm over a channel until the host goes away.
 *
 * @param vm The `node:vm` module.
 * @param channel The link to the host.
 * @param bootstrapSource The context bootstrap's source, `CONTEXT_BOOTSTRAP_SOURCE`.
 * @param marshallersSource The source of `createMarshallers`.
 * @param hostExportNames What `cordon:host` exports.
 * @returns Settles when the host is gone.
 */
export function realmMain(
  vm: VmApi,
  channel: RealmChannel,
  bootstrapSource: string,
  marshallersSource: string,
  hostExportNames: string[],
): Promise<void> {
  "use strict";
  const ErrorCtor = Error;
  const toText = String;
  const parse = JSON.parse;
  const stringify = JSON.stringify;
  // The event loop gets a turn whenever the realm idles after a spin, and
  // at least every this many batches while it blocks, so the runtime's own
  // housekeeping (rejection tracking, V8 tasks) runs. A turn can take a
  // millisecond, so while lone calls stream it waits for idle time longer.
  const PAUSE_EVERY = 64;
  const PAUSE_EVERY_STREAMING = 1024;
  let control: ContextControl | null = null;
  let drainContext: ((timeoutMs?: number) => void) | null = null;
  // Until the plugin is loaded the realm waits on the event loop: loading
  // awaits `link()` and `evaluate()`, whose promises are the realm's own.
  let loaded = false;
  let blocking = false;
  let flushQueued = false;
  let mainTurnWanted = false;
  // Whether the last batch held a call the host waits for alone ("J"): its
  // next message likely follows soon, so the wait for it spins first. Under
  // concurrent load ("I") the realm parks at once and leaves the core to
  // the host.
  let lone = false;

  /** Runs the context's pending jobs, then sends what they queued. */
  function flushTurn(): void {
    flushQueued = false;
    if (drainContext !== null) {
      try {
        drainContext();
      } catch {
        // Plugin jobs report their own failures; a drain cannot fail more.
      }
    }
    channel.flush();
  }

  /**
   * Asks for a turn of the realm's event loop before the loop blocks again:
   * some of Node's answers to plugin code (a refused `import()`) arrive as
   * promise jobs of the realm itself, not of the context.
   */
  function wantMainTurn(): void {
    if (mainTurnWanted) return;
    mainTurnWanted = true;
    // A blocking loop gives the turn itself; otherwise the event loop runs.
    if (!blocking) {
      channel.pause().then(() => {
        if (!mainTurnWanted) return;
        mainTurnWanted = false;
        flushTurn();
      });
    }
  }

  function sendSafely(
    kind: string,
    id: number,
    name: string,
    json: string,
  ): boolean {
    try {
      channel.send(kind, id, name, json);
    } catch {
      return false;
    }
    // A blocking loop flushes after each batch itself.
    if (!blocking && !flushQueued) {
      flushQueued = true;
      queueMicrotask(flushTurn);
    }
    return true;
  }

  // The context may call these; they take and return primitives only.
  const hooks = {
    call(callId: unknown, op: unknown, args: unknown): boolean {
      if (
        typeof callId !== "number" || typeof op !== "string" ||
        typeof args !== "string"
      ) return false;
      return sendSafely("C", callId, op, args);
    },
    report(id: unknown, ok: unknown, json: unknown): boolean {
      if (typeof id !== "number" || typeof json !== "string") return false;
      return sendSafely(ok === true ? "R" : "E", id, "", json);
    },
    log(level: unknown, message: unknown): boolean {
      if (typeof level !== "string" || typeof message !== "string") {
        return false;
      }
      return sendSafely("L", 0, level, stringify(message));
    },
  };

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

  function loadFailed(error: Record<string, unknown>): void {
    sendSafely("X", 0, "", stringify(error));
  }

  async function load(message: Record<string, unknown>): Promise<void> {
    let context: object;
    let current: ContextControl;
    let drainHere: (timeoutMs?: number) => void;
    try {
      context = vm.createContext(Object.create(null), {
        name: `cordon plugin ${toText(message.pluginId)}`,
        codeGeneration: { strings: false, wasm: false },
        // The context's promise jobs run when the realm drains them, after
        // each batch of messages, not on the realm's event loop.
        microtaskMode: "afterEvaluate",
      });
      const drain = new vm.Script("", { filename: "cordon:drain" });
      drainHere = (timeoutMs) => {
        if (timeoutMs === undefined) drain.runInContext(context);
        else drain.runInContext(context, { timeout: timeoutMs });
      };
      drainContext = drainHere;
      const makeMarshallers = vm.runInContext(
        `(${marshallersSource})`,
        context,
        { filename: "cordon:marshal" },
      );
      const bootstrap = vm.runInContext(`(${bootstrapSource})`, context, {
        filename: "cordon:bootstrap",
      }) as (...args: unknown[]) => ContextControl;
      current = bootstrap(makeMarshallers, hooks, message.initJson);
      current.lockdown();
      control = current;
    } catch (thrown) {
      loadFailed({
        code: "SANDBOX_UNAVAILABLE",
        name: "Error",
        message: `Cannot prepare the plugin's vm context: ${messageOf(thrown)}`,
      });
      return;
    }
    let plugin: VmModule;
    let host: VmModule;
    try {
      host = new vm.SyntheticModule(hostExportNames, function () {
        for (const name of hostExportNames) {
          this.setExport(name, current.hostExport(name));
        }
      }, { context, identifier: "cordon:host" });
      plugin = new vm.SourceTextModule(toText(message.source), {
        context,
        identifier: toText(message.identifier),
        importModuleDynamically: (specifier: unknown) => {
          wantMainTurn();
          throw current.importError(toText(specifier));
        },
      });
    } catch (thrown) {
      loadFailed({
        code: "GUEST_SYNTAX_ERROR",
        name: "SyntaxError",
        message: `The plugin module is not a valid ES module: ${
          messageOf(thrown)
        }`,
      });
      return;
    }
    let denied: { specifier: string; attributes: boolean } | null = null;
    try {
      await plugin.link((specifier, _referrer, extra) => {
        const attributes = extra?.attributes ?? extra?.assert ?? {};
        if (Object.keys(attributes).length > 0) {
          denied = { specifier, attributes: true };
          throw new ErrorCtor("denied");
        }
        if (specifier === "cordon:host") return host;
        denied = { specifier, attributes: false };
        throw new ErrorCtor("denied");
      });
    } catch (thrown) {
      if (denied !== null) loadFailed({ deniedImport: denied });
      else {
        loadFailed({
          code: "GUEST_ERROR",
          name: "Error",
          message: `Cannot link the plugin module: ${messageOf(thrown)}`,
        });
      }
      return;
    }
    try {
      const evaluation = plugin.evaluate({ timeout: message.timeoutMs });
      // The module's promise jobs (its top-level await too) wait in the
      // context's queue; Node does not run them after evaluate().
      drainHere(Number(message.timeoutMs));
      await evaluation;
    } catch (thrown) {
      // Only Node's own timeout error is an Error of this (the realm's)
      // thread; plugin values are the context's.
      if (
        thrown instanceof ErrorCtor &&
        (thrown as { code?: unknown }).code === "ERR_SCRIPT_EXECUTION_TIMEOUT"
      ) {
        loadFailed({ code: "TIMEOUT", name: "TimeoutError", message: "" });
      } else loadFailed(parse(current.describe(thrown)));
      return;
    }
    sendSafely("O", 0, "", current.setNamespace(plugin.namespace));
    loaded = true;
  }

  function fail(id: number, message: string): void {
    sendSafely(
      "E",
      id,
      "",
      stringify({ code: "SANDBOX_CRASHED", name: "Error", message }),
    );
  }

  function dispatch(kind: string, id: number, name: string, json: string) {
    switch (kind) {
      case "I":
      case "J":
        if (kind === "J") lone = true;
        if (control === null) {
          fail(id, "The plugin is not loaded: start it first");
          return;
        }
        try {
          control.invoke(id, name, json);
        } catch (thrown) {
          fail(id, `The plugin realm failed: ${messageOf(thrown)}`);
        }
        return;
      case "S":
      case "F":
        try {
          control?.settle(id, kind === "S", json);
        } catch {
          // A settle for a realm that is going away.
        }
        return;
      case "D": {
        let message: Record<string, unknown>;
        try {
          message = parse(json);
        } catch {
          message = {};
        }
        load(message).catch((thrown) =>
          loadFailed({
            code: "SANDBOX_CRASHED",
            name: "Error",
            message: `The plugin realm failed while loading: ${
              messageOf(thrown)
            }`,
          })
        );
        return;
      }
    }
  }

  async function serve(): Promise<void> {
    let turns = 0;
    for (;;) {
      blocking = loaded;
      const spin = lone;
      lone = false;
      let open = channel.receive(dispatch, blocking, spin);
      if (open === null) {
        // Idle after a spin: housekeeping now costs no call anything.
        turns = 0;
        blocking = false;
        await channel.pause();
        continue;
      }
      if (typeof open !== "boolean") open = await open;
      if (!open) return;
      flushTurn();
      while (mainTurnWanted) {
        blocking = false;
        await channel.pause();
        blocking = loaded;
        mainTurnWanted = false;
        flushTurn();
      }
      if (
        blocking && ++turns >= (spin ? PAUSE_EVERY_STREAMING : PAUSE_EVERY)
      ) {
        turns = 0;
        blocking = false;
        await channel.pause();
      }
    }
  }

  return serve();
}

const PERMISSION_NAMES = [
  "read",
  "write",
  "net",
  "env",
  "run",
  "ffi",
  "sys",
];

function programBody(): string {
  return [
    `const encodeFrame = (${encodeFrame.toString()});`,
    `const frameDecoder = (${frameDecoder.toString()});`,
    `const bootstrapSource = ${JSON.stringify(CONTEXT_BOOTSTRAP_SOURCE)};`,
    `const marshallersSource = ${
      JSON.stringify(createMarshallers.toString())
    };`,
    `const hostExportNames = ${JSON.stringify(HOST_EXPORT_NAMES)};`,
    `const realmMain = (${realmMain.toString()});`,
    `const denoApi = globalThis.Deno;`,
    // What the realm may do: a realm process runs with --no-prompt, where
    // asking for a "prompt" permission is refused without a prompt.
    `const permissionOf = (name) => { const { state } = denoApi.permissions.querySync({ name }); return state === "prompt" && refusesPrompts ? denoApi.permissions.requestSync({ name }).state : state; };`,
    `const permissions = denoApi && denoApi.permissions ? Object.fromEntries(${
      JSON.stringify(PERMISSION_NAMES)
    }.map((name) => [name, permissionOf(name)])) : null;`,
    `const channel = openChannel();`,
    `channel.send("Y", 0, "", JSON.stringify(permissions));`,
    `channel.flush();`,
    // The host is gone (or the realm broke): so is the realm.
    `realmMain(vm, channel, bootstrapSource, marshallersSource, hostExportNames)`,
    `  .then(() => process.exit(0), () => process.exit(1));`,
  ].join("\n");
}

let threadProgram: string | undefined;
let processProgram: string | undefined;

/**
 * The program of a realm on a worker thread (CommonJS, for `eval: true`).
 * Frames cross in the shared mailbox of `workerData.buffer` (see
 * `_shared_mailbox.ts`), with `workerData.inbox` and `workerData.outbox`
 * for batches that do not fit; the realm waits on it with `Atomics.wait`.
 *
 * @returns The source text.
 */
export function threadRealmProgram(): string {
  threadProgram ??= [
    `"use strict";`,
    `const vm = require("node:vm");`,
    `const process = require("node:process");`,
    `const { setImmediate, setInterval, clearInterval } = require("node:timers");`,
    `const { workerData, receiveMessageOnPort } = require("node:worker_threads");`,
    `process.on("unhandledRejection", () => {});`,
    // Node warns once per realm that vm modules are experimental.
    `process.removeAllListeners("warning");`,
    `const sharedMailbox = (${sharedMailbox.toString()});`,
    `const spinWait = (${spinWait.toString()});`,
    `const waitForChange = (${waitForChange.toString()});`,
    `const refusesPrompts = false;`,
    `function openChannel() {`,
    `  const { buffer, inbox, outbox: overflow } = workerData;`,
    `  const mailbox = sharedMailbox(buffer, 1, (text) => overflow.postMessage(text), () => receiveMessageOnPort(inbox));`,
    `  const { cells, inboundBell } = mailbox;`,
    `  let outbox = "";`,
    `  let feed = null;`,
    `  let seen = 0;`,
    `  const take = (onFrame) => {`,
    `    seen = Atomics.load(cells, inboundBell);`,
    `    feed ??= frameDecoder(onFrame);`,
    `    return mailbox.take(feed);`,
    `  };`,
    `  return {`,
    `    send: (kind, id, name, json) => { outbox += encodeFrame(kind, id, name, json); },`,
    `    flush: () => { if (outbox !== "") { const text = outbox; outbox = ""; mailbox.send(text); } },`,
    `    receive: (onFrame, block, spin) => {`,
    `      if (take(onFrame)) return true;`,
    `      if (block && spin && !spinWait(cells, inboundBell, seen, ${REALM_SPIN_MS}, 0)) return null;`,
    `      if (block) { Atomics.wait(cells, inboundBell, seen); take(onFrame); return true; }`,
    `      return waitForChange(cells, inboundBell, seen).then(() => { take(onFrame); return true; });`,
    `    },`,
    `    pause: () => new Promise((resolve) => setImmediate(resolve)),`,
    `  };`,
    `}`,
    programBody(),
  ].join("\n");
  return threadProgram;
}

/**
 * The program of a realm in a child process: an ES module that reads
 * frames (see `_line_codec.ts`) on stdin and writes them on stdout,
 * straight to the pipes, without Node's stream layer, and shares a file
 * with the host for calls the host waits for alone (see
 * `_file_channel.ts`). Its first argument, if any, is the file's path: it
 * opens the file and, on Deno, then gives up reading and writing files
 * altogether, before any plugin code exists.
 *
 * @returns The source text.
 */
export function processRealmProgram(): string {
  processProgram ??= [
    `import vm from "node:vm";`,
    `import fs from "node:fs";`,
    `import { setImmediate } from "node:timers";`,
    // Node's ES module facade of node:process reads process.stdin, which
    // makes stdin non-blocking; the global does not.
    `const process = globalThis.process;`,
    `globalThis.addEventListener?.("unhandledrejection", (event) => event.preventDefault());`,
    `process.on("unhandledRejection", () => {});`,
    `const pipeIo = (${pipeIo.toString()});`,
    `const fileCells = (${fileCells.toString()});`,
    `const fileChannel = (${fileChannel.toString()});`,
    `const refusesPrompts = true;`,
    // Without the file the realm still works, through its pipes alone.
    `function openCells() {`,
    `  const path = globalThis.Deno ? Deno.args[0] : process.argv[1];`,
    `  let fd = null;`,
    `  try {`,
    `    if (typeof path === "string" && path !== "") fd = fs.openSync(path, "r+");`,
    `  } catch {`,
    `    fd = null;`,
    `  } finally {`,
    `    if (globalThis.Deno) {`,
    `      Deno.permissions.revokeSync({ name: "read" });`,
    `      Deno.permissions.revokeSync({ name: "write" });`,
    `    }`,
    `  }`,
    `  return fd === null ? null : fileCells(fs, fd, ${FILE_SLOT_BYTES});`,
    `}`,
    `function openChannel() {`,
    `  const io = pipeIo(globalThis.Deno, fs);`,
    `  const channel = fileChannel({ io, cells: openCells(), encodeFrame, frameDecoder, spinMs: ${REALM_SPIN_MS} });`,
    `  channel.pause = () => new Promise((resolve) => setImmediate(resolve));`,
    `  return channel;`,
    `}`,
    programBody(),
  ].join("\n");
  return processProgram;
}
