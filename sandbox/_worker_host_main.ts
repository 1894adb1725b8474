/**
 * The main module of a worker host: a Deno subprocess, started with no
 * permissions and `--unstable-worker-options`, that runs one guest at a
 * time, each in a fresh worker with every permission denied. The parent
 * talks to it in JSON lines over stdin and stdout; guest workers cannot
 * reach either (their realm has no `Deno`, `process`, `import()` or code
 * generation from strings).
 *
 * @module
 */

/** A message from the parent to a worker host. */
export type HostRequest =
  | {
    t: "run";
    id: string;
    source: string;
    context: unknown;
    maxLogBytes: number;
    parseOnly?: boolean;
  }
  | { t: "stop"; id: string };

/**
 * The host's main function. Self-contained: the parent injects its source
 * with the worker bootstrap's source as the first argument.
 *
 * Lifecycle of a guest worker: created (ahead of time when `keepReady`,
 * right after the previous run answered), `loaded` (reported to the parent
 * as `warm`), given one run, then it closes itself after its result, or
 * after `stop` when idle. A host whose
 * worker does not answer `stop` is killed by the parent, because
 * `terminate()` does not stop a worker stuck in a JavaScript loop. The host
 * exits when its stdin closes, so it never outlives its parent.
 *
 * @param bootstrapSource The guest worker's module source.
 * @param keepReady Whether to keep one fresh worker started ahead of runs.
 */
export function workerHostMain(
  bootstrapSource: string,
  keepReady: boolean,
): void {
  const encoder = new TextEncoder();
  const stdout = Deno.stdout;

  function send(message: Record<string, unknown>): void {
    const bytes = encoder.encode(JSON.stringify(message) + "\n");
    let offset = 0;
    while (offset < bytes.length) {
      offset += stdout.writeSync(bytes.subarray(offset));
    }
  }

  const bootstrapUrl = URL.createObjectURL(
    new Blob([bootstrapSource], { type: "text/javascript" }),
  );

  interface Current {
    id: string;
    worker: Worker;
    port: MessagePort;
  }

  let ready: Worker | undefined;
  let current: Current | undefined;

  function finish(run: Current): void {
    if (current === run) current = undefined;
    run.port.onmessage = null;
    run.port.close();
    run.worker.terminate();
    // Starting a worker blocks this thread for most of its start-up, so the
    // next one starts after the answer is out, not while the guest runs.
    if (keepReady) setTimeout(refill, 0);
  }

  function refill(): void {
    if (ready === undefined) ready = spawn(true);
  }

  function spawn(ahead: boolean): Worker {
    const worker = new Worker(bootstrapUrl, {
      type: "module",
      name: ahead ? "cordon-guest-ready" : "cordon-guest",
      deno: { permissions: "none" },
    });
    worker.onerror = (event) => {
      event.preventDefault();
      if (current?.worker === worker) {
        const run = current;
        finish(run);
        send({ t: "failed", id: run.id, message: String(event.message) });
      } else if (ready === worker) {
        ready = undefined;
        worker.terminate();
      }
    };
    worker.onmessageerror = () => {};
    worker.onmessage = (event) => {
      if (ready === worker && event.data === "loaded") send({ t: "warm" });
    };
    return worker;
  }

  function start(request: Extract<HostRequest, { t: "run" }>): void {
    const worker = ready ?? spawn(false);
    ready = undefined;
    worker.onmessage = () => {};
    const channel = new MessageChannel();
    const run: Current = { id: request.id, worker, port: channel.port1 };
    current = run;
    channel.port1.onmessage = (event) => {
      const data = event.data as { t: string; [key: string]: unknown };
      switch (data.t) {
        case "started":
          send({ t: "started", id: run.id });
          break;
        case "log":
          send({
            t: "log",
            id: run.id,
            level: data.level,
            message: data.message,
          });
          break;
        case "result":
          finish(run);
          send({ t: "result", id: run.id, outcome: data.outcome });
          break;
        case "stopped":
          finish(run);
          send({ t: "stopped", id: run.id });
          break;
      }
    };
    worker.postMessage({
      port: channel.port2,
      source: request.source,
      context: request.context,
      maxLogBytes: request.maxLogBytes,
      parseOnly: request.parseOnly === true,
    }, [channel.port2]);
  }

  function handle(request: HostRequest): void {
    if (request.t === "run") start(request);
    else if (request.t === "stop" && current?.id === request.id) {
      current.port.postMessage("stop");
    }
  }

  async function readRequests(): Promise<void> {
    const decoder = new TextDecoder();
    const chunk = new Uint8Array(64 * 1024);
    let buffered = "";
    for (;;) {
      const read = await Deno.stdin.read(chunk);
      if (read === null) break;
      buffered += decoder.decode(chunk.subarray(0, read), { stream: true });
      let newline = buffered.indexOf("\n");
      while (newline >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        if (line !== "") handle(JSON.parse(line) as HostRequest);
        newline = buffered.indexOf("\n");
      }
    }
    Deno.exit(0);
  }

  if (keepReady) ready = spawn(true);
  readRequests();
}
