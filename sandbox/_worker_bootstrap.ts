/**
 * The main module of a guest worker, as a self-contained function whose
 * source the worker host turns into the worker's module.
 *
 * @module
 */

import type { createMarshallers } from "../protocol/marshal.ts";
import type {
  GuestRealmSettings,
  ModuleImporter,
  prepareGuestRealm,
} from "./_guest_realm.ts";
import type { JsonValue } from "../protocol/sandbox_result.ts";

/** The one message a guest worker receives from its host. */
export interface WorkerStart {
  /** The private channel for everything that follows. */
  port: MessagePort;
  /** The guest ES module source. */
  source: string;
  /** The context passed to a default-exported function. */
  context: JsonValue;
  /** The console budget, in bytes of UTF-8. */
  maxLogBytes: number;
  /** Whether to parse the source without running it. */
  parseOnly: boolean;
}

/**
 * Runs inside a fresh worker, before any guest code: hardens the realm
 * (and, in a worker started ahead of time, named `cordon-guest-ready`,
 * warms up the module loader and message passing), tells the host it is ready (`"loaded"` on
 * the worker's own channel), then
 * waits for one {@linkcode WorkerStart}. Everything after that goes over the
 * start message's private port, which guest code cannot reach: `started`,
 * `log` lines, then one `result` (after which the worker closes itself, so
 * no guest timer or promise callback runs again), or `stopped` when the
 * host asks it to stop while it is idle. Self-contained.
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
    close(): void;
    postMessage(message: unknown): void;
    onmessage: ((event: MessageEvent) => void) | null;
  };
  const closeSelf = scope.close.bind(scope);
  const postToHost = scope.postMessage.bind(scope);
  const pooled = (globalThis as unknown as { name: string }).name ===
    "cordon-guest-ready";
  const Channel = MessageChannel;
  const realm = prepare(create(), settings, importer);
  const realmFailure = {
    ok: false,
    code: "SANDBOX_CRASHED",
    name: "SandboxCrashedError",
    message:
      "The sandbox realm failed while settling the guest's answer: run the code again, and report it if it repeats",
  };

  scope.onmessage = (event: MessageEvent) => {
    scope.onmessage = null;
    const start = event.data as WorkerStart;
    const port = start.port;
    const send = port.postMessage.bind(port);
    port.onmessage = () => {
      send({ t: "stopped" });
      closeSelf();
    };
    send({ t: "started" });
    realm.run(
      start.source,
      start.context,
      start.maxLogBytes,
      (level, message) => send({ t: "log", level, message }),
      start.parseOnly,
    ).then(
      (outcome) => {
        send({ t: "result", outcome });
        closeSelf();
      },
      () => {
        send({ t: "result", outcome: realmFailure });
        closeSelf();
      },
    );
  };
  // A worker's first message, and first transferred port, cost its isolate
  // a few milliseconds of one-time set-up; a pooled worker pays that here,
  // on a private channel closed before any guest code exists.
  function warmUpMessages(): Promise<void> {
    const channel = new Channel();
    const carried = new Channel();
    return new Promise<void>((resolve) => {
      channel.port1.onmessage = (event: MessageEvent) => {
        (event.data as { port: MessagePort }).port.close();
        channel.port1.close();
        carried.port1.close();
        resolve();
      };
      channel.port2.postMessage({ port: carried.port2 }, [carried.port2]);
    });
  }
  if (pooled) {
    realm.warmUp().then(warmUpMessages).then(() => postToHost("loaded"));
  } else postToHost("loaded");
}
