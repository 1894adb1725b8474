/**
 * The main module of a worker host: a Deno subprocess, started with no
 * permissions and `--unstable-worker-options`, that runs one guest at a
 * time, each in a fresh worker with every permission denied. The parent
 * talks to it in JSON lines over stdin and stdout; guest workers cannot
 * reach either (their realm has no `Deno`, `process`, `postMessage`,
 * `import()` or code generation from strings).
 *
 * @module
 */

import type { markGuestSource } from "./_guest_realm.ts";
import type { ResultBound } from "./_result_bound.ts";

/**
 * The limits a host holds its run to itself, beside the guest: its parent
 * holds them too, but on its own event loop, which a busy caller blocks
 * while the guest keeps a core or fills memory.
 */
export interface HostWatch {
  /** The run's time limit, from the guest's start, in ms. */
  timeoutMs: number;
  /** How long a guest past its deadline has to stop before the host exits. */
  graceMs: number;
  /**
   * The most the host process may hold resident over what it holds as the
   * run arrives, or `null` for no bound. Over, not in all: a reused host
   * keeps some of its last runs (a Blob's bytes) and its start-up's, which
   * the caller's own reading of the same process allows for by putting
   * back only hosts that grew little, at moments of its own.
   */
  residentBytes: number | null;
  /** How often the host reads its resident memory, in ms. */
  pollMs: number;
}

/** A message from the parent to a worker host. */
export type HostRequest =
  | {
    t: "run";
    id: string;
    source: string;
    context: unknown;
    maxLogBytes: number;
    /** The bound on the value's JSON text, and its refusal. */
    result: ResultBound;
    parseOnly?: boolean;
    watch: HostWatch;
  }
  | { t: "stop"; id: string };

/**
 * The host's main function. Self-contained: the parent injects its source
 * with the worker bootstrap's source and `markGuestSource` as source text.
 *
 * The host, whose isolate is warm, turns each guest source into a `blob:`
 * module URL, so a fresh worker only has to import it. Every worker shares
 * one main module and gets its launch as JSON in its name. Without
 * `keepReady` a run's worker gets the run itself, and starts it as soon as
 * it has loaded, with no message to wait for: a fresh worker's first
 * message costs it milliseconds. With `keepReady` one worker is
 * started ahead of time (right after the previous run answered), warms up,
 * reports `loaded` (passed on to the parent as `warm`) and gets its run as
 * a message. Either way, a worker runs one guest and closes itself after
 * its result, or after `stop` when idle. A host whose worker does not
 * answer `stop` is killed by the parent, because `terminate()` does not
 * stop a worker stuck in a JavaScript loop; a `stopped` the host did not
 * ask for is treated as a failed worker. The host exits when its stdin
 * closes, so it never outlives its parent.
 *
 * The host holds each run to its `watch` itself, since its own thread is
 * idle while the guest runs on its worker's: past the deadline it tells
 * the parent (`over`, `timeout`), asks the worker to stop and exits if the
 * worker has not within the grace; past its resident bound it tells the
 * parent (`over`, `memory`) and exits at once. The parent reads `over`
 * before the exit, whenever its own loop gets to it.
 *
 * A result's value is counted against its run's `result.maxChars` as the
 * guest worker copies it, then written as JSON here, where its text is
 * made anyway, and measured whole: a value whose text passes the bound, or
 * that V8 cannot make one string of, is answered with `result.refusal`.
 *
 * @param bootstrapSource The guest worker's main module source.
 * @param mark `markGuestSource`, injected as source.
 * @param keepReady Whether to keep one fresh worker started ahead of runs.
 */
export function workerHostMain(
  bootstrapSource: string,
  mark: typeof markGuestSource,
  keepReady: boolean,
): void {
  const encoder = new TextEncoder();
  const stdout = Deno.stdout;
  const MODULE_TYPE = { type: "text/javascript" };
  const { exit, memoryUsage } = Deno;

  function send(message: Record<string, unknown>): void {
    writeLine(JSON.stringify(message));
  }

  function writeLine(text: string): void {
    const bytes = encoder.encode(text + "\n");
    let offset = 0;
    while (offset < bytes.length) {
      offset += stdout.writeSync(bytes.subarray(offset));
    }
  }

  function moduleUrl(parts: string[]): string {
    return URL.createObjectURL(new Blob(parts, MODULE_TYPE));
  }

  const mainUrl = moduleUrl([bootstrapSource]);

  function guestModule(source: string, parseOnly: boolean) {
    const marked = mark(source, parseOnly);
    return {
      url: moduleUrl([marked.text]),
      marker: marked.marker,
      line: marked.line,
      shift: marked.shift,
      parseOnly,
    };
  }

  const readyLaunch = keepReady
    ? JSON.stringify({
      mode: "ready",
      warmUp: {
        module: guestModule("export default 0;\n", false),
        context: null,
        maxLogBytes: 0,
        // Its answer goes nowhere.
        result: { maxChars: 1, refusal: null },
      },
    })
    : "";

  interface Current {
    id: string;
    worker: Worker;
    url: string;
    stopAsked: boolean;
    result: ResultBound;
    watch: HostWatch;
    deadline?: ReturnType<typeof setTimeout>;
    memoryWatch?: ReturnType<typeof setInterval>;
  }

  const TOO_DEEP = {
    ok: false,
    code: "STACK_OVERFLOW",
    name: "RangeError",
    message: "Maximum call stack size exceeded",
  };

  let ready: Worker | undefined;
  let current: Current | undefined;

  function finish(run: Current): void {
    if (current === run) current = undefined;
    clearTimeout(run.deadline);
    clearInterval(run.memoryWatch);
    run.worker.onmessage = null;
    run.worker.onmessageerror = null;
    run.worker.terminate();
    URL.revokeObjectURL(run.url);
    // Starting a worker blocks this thread for most of its start-up, so the
    // next one starts after the answer is out, not while the guest runs.
    if (keepReady) setTimeout(refill, 0);
  }

  function refill(): void {
    if (ready !== undefined) return;
    ready = spawn(readyLaunch);
    ready.postMessage("warm-up");
  }

  function spawn(launch: string): Worker {
    const worker = new Worker(mainUrl, {
      type: "module",
      name: launch,
      deno: { permissions: "none" },
    });
    worker.onerror = (event) => {
      event.preventDefault();
      if (current?.worker === worker) {
        const run = current;
        send({ t: "failed", id: run.id, message: String(event.message) });
        finish(run);
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

  // The value's text alone, so the bound counts nothing of the envelope:
  // undefined when it is longer than maxChars, or longer than V8's longest
  // string (2 ** 29 - 24), which JSON.stringify refuses to make.
  function valueText(value: unknown, maxChars: number): string | undefined {
    let text: string;
    try {
      text = JSON.stringify(value) ?? "null";
    } catch (thrown) {
      if (
        thrown instanceof RangeError &&
        thrown.message === "Invalid string length"
      ) return undefined;
      throw thrown;
    }
    return text.length > maxChars ? undefined : text;
  }

  function sendResult(
    id: string,
    outcome: unknown,
    bound: ResultBound,
  ): void {
    const answer = outcome as { ok?: unknown; value?: unknown } | null;
    if (answer?.ok !== true) {
      send({ t: "result", id, outcome });
      return;
    }
    const text = valueText(answer.value, bound.maxChars);
    if (text === undefined) {
      send({ t: "result", id, outcome: bound.refusal });
      return;
    }
    writeLine(
      `{"t":"result","id":${
        JSON.stringify(id)
      },"outcome":{"ok":true,"value":${text}}}`,
    );
  }

  function startDeadline(run: Current): void {
    run.deadline = setTimeout(() => {
      send({ t: "over", id: run.id, reason: "timeout" });
      askToStop(run);
      // A worker stuck in code does not answer, and `terminate()` does not
      // stop it: only the end of this process does.
      run.deadline = setTimeout(() => exit(1), run.watch.graceMs);
    }, run.watch.timeoutMs);
  }

  function watchMemory(run: Current): void {
    const allowed = run.watch.residentBytes;
    if (allowed === null) return;
    const bound = memoryUsage().rss + allowed;
    run.memoryWatch = setInterval(() => {
      if (memoryUsage().rss > bound) {
        send({ t: "over", id: run.id, reason: "memory" });
        exit(1);
      }
    }, run.watch.pollMs);
  }

  function askToStop(run: Current): void {
    if (run.stopAsked) return;
    run.stopAsked = true;
    run.worker.postMessage("stop");
  }

  function listenToRun(run: Current): void {
    // The one message of a run this thread may fail to rebuild is its
    // result: V8 copies it recursively, and one nested deeper than this
    // thread's stack takes is answered as the stack overflow it is
    // (STACK_OVERFLOW), not left to the run's deadline.
    const tooDeep = () => {
      send({ t: "result", id: run.id, outcome: TOO_DEEP });
      finish(run);
    };
    run.worker.onmessageerror = tooDeep;
    run.worker.onmessage = (event) => {
      if (event.data === "started") {
        send({ t: "started", id: run.id });
        startDeadline(run);
        return;
      }
      const data = event.data as { t?: unknown; [key: string]: unknown };
      switch (data?.t) {
        case "log":
          send({
            t: "log",
            id: run.id,
            level: data.level,
            message: data.message,
          });
          break;
        case "result":
          sendResult(run.id, data.outcome, run.result);
          finish(run);
          break;
        // The guest worker could not post a result that deep.
        case "too-deep":
          tooDeep();
          break;
        case "stopped":
          send(
            run.stopAsked
              ? { t: "stopped", id: run.id }
              : { t: "failed", id: run.id, message: "an unasked stop" },
          );
          finish(run);
          break;
      }
    };
  }

  function start(request: Extract<HostRequest, { t: "run" }>): void {
    const module = guestModule(request.source, request.parseOnly === true);
    const run = {
      module,
      context: request.context,
      maxLogBytes: request.maxLogBytes,
      result: request.result,
    };
    const pooled = ready;
    ready = undefined;
    const url = module.url;
    let worker: Worker;
    if (pooled !== undefined) {
      worker = pooled;
      // As JSON text: posting a string cost 30 µs where the same object
      // cost 75, measured alone.
      worker.postMessage(JSON.stringify(run));
    } else {
      worker = spawn(JSON.stringify({ mode: "run", run }));
    }
    const entry: Current = {
      id: request.id,
      worker,
      url,
      stopAsked: false,
      result: request.result,
      watch: request.watch,
    };
    current = entry;
    listenToRun(entry);
    watchMemory(entry);
  }

  function handle(request: HostRequest): void {
    if (request.t === "run") start(request);
    else if (request.t === "stop" && current?.id === request.id) {
      askToStop(current);
    }
  }

  async function readRequests(): Promise<void> {
    const decoder = new TextDecoder();
    const chunk = new Uint8Array(64 * 1024);
    // The pieces of the line under way: a run with a large source arrives
    // in many chunks, and only each new chunk is searched for its end.
    let pieces: string[] = [];
    for (;;) {
      const read = await Deno.stdin.read(chunk);
      if (read === null) break;
      const text = decoder.decode(chunk.subarray(0, read), { stream: true });
      let start = 0;
      let newline = text.indexOf("\n");
      while (newline >= 0) {
        pieces.push(text.slice(start, newline));
        const line = pieces.join("");
        pieces = [];
        if (line !== "") handle(JSON.parse(line) as HostRequest);
        start = newline + 1;
        newline = text.indexOf("\n", start);
      }
      if (start < text.length) pieces.push(text.slice(start));
    }
    Deno.exit(0);
  }

  if (keepReady) refill();
  readRequests();
}
