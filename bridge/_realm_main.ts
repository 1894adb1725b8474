/**
 * The program of a plugin realm: it runs off the host's thread (in a worker
 * thread or a child process), builds the plugin's vm context, links the
 * plugin module to `cordon:host` only, and answers the host's messages. The
 * function is self-contained: the host sends its source text, never a
 * closure.
 *
 * @module
 */

import { createMarshallers } from "../protocol/marshal.ts";
import { contextBootstrap, HOST_EXPORT_NAMES } from "./_context_bootstrap.ts";
import { encodeLine, lineDecoder } from "./_line_codec.ts";
import type { ContextControl } from "./_context_bootstrap.ts";

/**
 * How the realm talks to the host: one message at a time, as data. A
 * message is a header and, for payloads and answers, JSON text that the
 * realm parses inside the context.
 */
export interface RealmChannel {
  /** Sends one message to the host. */
  send(header: Record<string, unknown>, json?: string): void;
  /** Registers the handler of the host's messages. */
  onMessage(
    handler: (
      header: Record<string, unknown>,
      json: string | undefined,
    ) => void,
  ): void;
}

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
 * Runs a plugin realm over a channel.
 *
 * @param vm The `node:vm` module.
 * @param channel The link to the host.
 * @param bootstrapSource The source of `contextBootstrap`.
 * @param marshallersSource The source of `createMarshallers`.
 * @param hostExportNames What `cordon:host` exports.
 */
export function realmMain(
  vm: VmApi,
  channel: RealmChannel,
  bootstrapSource: string,
  marshallersSource: string,
  hostExportNames: string[],
): void {
  "use strict";
  const ErrorCtor = Error;
  const toText = String;
  const parse = JSON.parse;
  let control: ContextControl | null = null;

  function sendSafely(header: Record<string, unknown>, json?: string): boolean {
    try {
      channel.send(header, json);
      return true;
    } catch {
      return false;
    }
  }

  // The context may call these; they take and return primitives only.
  const hooks = {
    call(callId: unknown, op: unknown, args: unknown): boolean {
      if (
        typeof callId !== "number" || typeof op !== "string" ||
        typeof args !== "string"
      ) return false;
      return sendSafely({ t: "call", callId, op }, args);
    },
    report(id: unknown, ok: unknown, json: unknown): boolean {
      if (typeof id !== "number" || typeof json !== "string") return false;
      return sendSafely({ t: "result", id, ok: ok === true }, json);
    },
    log(level: unknown, message: unknown): boolean {
      if (typeof level !== "string" || typeof message !== "string") {
        return false;
      }
      return sendSafely({ t: "log", level, message });
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

  async function load(message: Record<string, unknown>): Promise<void> {
    const fail = (error: Record<string, unknown>) =>
      sendSafely({ t: "loaded", ok: false, error });
    let context: object;
    let current: ContextControl;
    try {
      context = vm.createContext(Object.create(null), {
        name: `cordon plugin ${toText(message.pluginId)}`,
        codeGeneration: { strings: false, wasm: false },
      });
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
      fail({
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
          throw current.importError(toText(specifier));
        },
      });
    } catch (thrown) {
      fail({
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
      if (denied !== null) fail({ deniedImport: denied });
      else {
        fail({
          code: "GUEST_ERROR",
          name: "Error",
          message: `Cannot link the plugin module: ${messageOf(thrown)}`,
        });
      }
      return;
    }
    try {
      await plugin.evaluate({ timeout: message.timeoutMs });
    } catch (thrown) {
      // Only Node's own timeout error is an Error of this (the realm's)
      // thread; plugin values are the context's.
      if (
        thrown instanceof ErrorCtor &&
        (thrown as { code?: unknown }).code === "ERR_SCRIPT_EXECUTION_TIMEOUT"
      ) {
        fail({ code: "TIMEOUT", name: "TimeoutError", message: "" });
      } else fail(parse(current.describe(thrown)));
      return;
    }
    sendSafely({
      t: "loaded",
      ok: true,
      exportsJson: current.setNamespace(plugin.namespace),
    });
  }

  function fail(id: unknown, message: string): void {
    sendSafely(
      { t: "result", id, ok: false },
      JSON.stringify({ code: "SANDBOX_CRASHED", name: "Error", message }),
    );
  }

  channel.onMessage((message, json) => {
    switch (message.t) {
      case "load":
        load(message).catch((thrown) =>
          sendSafely({
            t: "loaded",
            ok: false,
            error: {
              code: "SANDBOX_CRASHED",
              name: "Error",
              message: `The plugin realm failed while loading: ${
                messageOf(thrown)
              }`,
            },
          })
        );
        return;
      case "invoke":
        if (control === null) {
          fail(message.id, "The plugin is not loaded: start it first");
          return;
        }
        try {
          control.invoke(
            message.id as number,
            toText(message.name),
            toText(json),
          );
        } catch (thrown) {
          fail(message.id, `The plugin realm failed: ${messageOf(thrown)}`);
        }
        return;
      case "settle":
        try {
          control?.settle(
            message.callId as number,
            message.ok === true,
            toText(json),
          );
        } catch {
          // A settle for a realm that is going away.
        }
        return;
    }
  });
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
    `const bootstrapSource = ${JSON.stringify(contextBootstrap.toString())};`,
    `const marshallersSource = ${
      JSON.stringify(createMarshallers.toString())
    };`,
    `const hostExportNames = ${JSON.stringify(HOST_EXPORT_NAMES)};`,
    `const realmMain = (${realmMain.toString()});`,
    `realmMain(vm, channel, bootstrapSource, marshallersSource, hostExportNames);`,
    `const denoApi = globalThis.Deno;`,
    `const permissions = denoApi && denoApi.permissions ? Object.fromEntries(${
      JSON.stringify(PERMISSION_NAMES)
    }.map((name) => [name, denoApi.permissions.querySync({ name }).state])) : null;`,
    `channel.send({ t: "ready", permissions });`,
  ].join("\n");
}

let threadProgram: string | undefined;
let processProgram: string | undefined;

/**
 * The program of a realm on a worker thread (CommonJS, for `eval: true`).
 *
 * @returns The source text.
 */
export function threadRealmProgram(): string {
  threadProgram ??= [
    `"use strict";`,
    `const vm = require("node:vm");`,
    `const process = require("node:process");`,
    `const { parentPort } = require("node:worker_threads");`,
    `process.on("unhandledRejection", () => {});`,
    // Node warns once per realm that vm modules are experimental.
    `process.removeAllListeners("warning");`,
    `const channel = {`,
    `  send: (header, json) => parentPort.postMessage([header, json]),`,
    `  onMessage: (handler) => parentPort.on("message", (message) => {`,
    `    if (Array.isArray(message)) handler(message[0], typeof message[1] === "string" ? message[1] : undefined);`,
    `  }),`,
    `};`,
    programBody(),
  ].join("\n");
  return threadProgram;
}

/**
 * The program of a realm in a child process: an ES module that reads lines
 * (see `_line_codec.ts`) on stdin and writes them on stdout. On Deno it
 * reads stdin as a `net.Socket`, on the event loop: `process.stdin` there
 * reads on a blocking thread, which costs two thread wake-ups per message.
 *
 * @returns The source text.
 */
export function processRealmProgram(): string {
  processProgram ??= [
    `import vm from "node:vm";`,
    `import net from "node:net";`,
    `import process from "node:process";`,
    `globalThis.addEventListener?.("unhandledrejection", (event) => event.preventDefault());`,
    `process.on("unhandledRejection", () => {});`,
    `const encodeLine = (${encodeLine.toString()});`,
    `const lineDecoder = (${lineDecoder.toString()});`,
    `const input = globalThis.Deno ? new net.Socket({ fd: 0, readable: true, writable: false }) : process.stdin;`,
    `let handler = () => {};`,
    `input.setEncoding("utf8");`,
    `input.on("data", lineDecoder((header, json) => handler(header, json)));`,
    // The host is gone: so is the realm.
    `input.on("end", () => process.exit(0));`,
    `input.on("error", () => process.exit(0));`,
    // Lines written in one turn of the event loop leave in one write; on
    // Deno straight to the pipe, without Node's stream layer.
    `const stdout = globalThis.Deno?.stdout;`,
    `const encoder = new TextEncoder();`,
    `const write = stdout`,
    `  ? (text) => { let bytes = encoder.encode(text); while (bytes.length > 0) bytes = bytes.subarray(stdout.writeSync(bytes)); }`,
    `  : (text) => { process.stdout.write(text); };`,
    `let outbox = "";`,
    `const flush = () => { const text = outbox; outbox = ""; write(text); };`,
    `const channel = {`,
    `  send: (header, json) => {`,
    `    if (outbox === "") queueMicrotask(flush);`,
    `    outbox += encodeLine(header, json);`,
    `  },`,
    `  onMessage: (next) => { handler = next; },`,
    `};`,
    programBody(),
  ].join("\n");
  return processProgram;
}
