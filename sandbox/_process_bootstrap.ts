/**
 * The main module of a process-tier run, as a self-contained function whose
 * source the process sandbox passes to `deno run` as a `data:` URL.
 *
 * @module
 */

import type { createMarshallers } from "../realm/marshal.ts";
import type {
  GuestRealmSettings,
  markGuestSource,
  ModuleImporter,
  prepareGuestRealm,
  RealmAnswer,
} from "./_guest_realm.ts";
import type { ResultBound } from "./_result_bound.ts";

/**
 * What the parent writes to the child's stdin, as one line of JSON; it then
 * keeps stdin open until the child has exited.
 */
export interface ProcessPayload {
  /** The per-run secret that starts every frame the bootstrap writes. */
  nonce: string;
  /** The guest ES module source. */
  source: string;
  /** The context passed to a default-exported function. */
  context: unknown;
  /** The console budget, in bytes of UTF-8. */
  maxLogBytes: number;
  /** The bound on the value's JSON text, and its refusal. */
  result: ResultBound;
  /** Whether to parse the source without running it. */
  parseOnly: boolean;
  /** The parent's pid: a child whose parent differs was orphaned early. */
  parent: number;
}

/**
 * Runs as the child's main module. It captures what it needs, hardens the
 * realm, reads the payload (one line of JSON) from stdin, then runs the
 * guest and writes frames to stdout:
 * `<nonce>{"t":"started"}`, `<nonce>{"t":"log",...}` per console line and
 * `<nonce>{"t":"result",...}`, each ended by a newline, and exits with code
 * 0 at once, so no guest timer runs after the answer.
 *
 * The nonce is the channel's integrity: it reaches the child on stdin, not
 * argv or env, lives only in this function's closure, and is joined to a
 * frame only after the frame is serialised by a serialiser that reads own
 * properties and calls no guest code. Guest code can write anything to
 * stdout, but not a frame, so its output becomes log lines. Self-contained.
 *
 * The guest module loads from a `blob:` URL, never a `data:` URL: Deno
 * keeps the analysis of a `data:` module in its cache folder, keyed by the
 * URL, which would put the guest's source on disk.
 *
 * @param prepare `prepareGuestRealm`, injected as source.
 * @param create `createMarshallers`, injected as source.
 * @param mark `markGuestSource`, injected as source.
 * @param settings What the realm removes.
 * @param importer Imports by URL, injected as source.
 * The answer goes out, and the process exits, when the realm answers.
 */
export function processBootstrap(
  prepare: typeof prepareGuestRealm,
  create: typeof createMarshallers,
  mark: typeof markGuestSource,
  settings: GuestRealmSettings,
  importer: ModuleImporter,
): void {
  const stdout = Deno.stdout;
  const apply = Reflect.apply;
  const promiseThen = Promise.prototype.then;
  const REALM_FAILURE = {
    ok: false,
    code: "SANDBOX_CRASHED",
    name: "SandboxCrashedError",
    message:
      "The sandbox realm failed while settling the guest's answer: run the code again, and report it if it repeats",
  };
  const writeSync = stdout.writeSync.bind(stdout);
  const exit = Deno.exit;
  const encoder = new TextEncoder();
  const encode = encoder.encode.bind(encoder);
  const Uint8ArrayCtor = Uint8Array;
  const typedArrayPrototype = Object.getPrototypeOf(Uint8Array.prototype);
  const getterOf = (name: string) =>
    Object.getOwnPropertyDescriptor(typedArrayPrototype, name)!.get!;
  const bufferOf = getterOf("buffer");
  const byteOffsetOf = getterOf("byteOffset");
  const byteLengthOf = getterOf("byteLength");
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const { keys } = Object;
  const { isArray } = Array;
  const numberIsFinite = Number.isFinite;
  const stdin = Deno.stdin;
  hideHostPaths();
  hideNameServer();
  refuseSignals();
  const marshallers = create();
  const BlobConstructor = Blob;
  // Captured before the realm is prepared, which takes it from the guest.
  const createObjectUrl = URL.createObjectURL;
  const realm = prepare(marshallers, settings, importer);

  // Deno answers `cwd()` and `execPath()` without any permission, and both
  // are host paths (the caller's folder, where Deno is installed). They
  // answer here only where the guest may read that path anyway. The
  // originals, the permission query and its `state` getter are captured
  // before guest code can replace them.
  function hideHostPaths(): void {
    const deno = Deno as unknown as Record<PropertyKey, unknown>;
    const permissions = Deno.permissions;
    const query = permissions.querySync;
    const status = query.call(permissions, { name: "read", path: "/" });
    const stateOf = Object.getOwnPropertyDescriptor(
      Object.getPrototypeOf(status),
      "state",
    )!.get!;
    const NotCapable = Deno.errors.NotCapable;
    const guard = (name: string, what: string) => {
      const original = deno[name] as () => string;
      Object.defineProperty(deno, name, {
        value: function pathIfReadable(): string {
          const path = apply(original, Deno, []) as string;
          const answer = apply(query, permissions, [{ name: "read", path }]);
          if (apply(stateOf, answer, []) === "granted") return path;
          throw new NotCapable(
            `Requires read access to ${what}, run again with the --allow-read flag`,
          );
        },
        writable: true,
        enumerable: true,
        configurable: true,
      });
    };
    guard("cwd", "the working directory");
    guard("execPath", "the Deno executable");
    // Deno's internals (its core, its console internals) are no part of the
    // guest's API.
    delete deno[(Deno as unknown as { internal: symbol }).internal];
  }

  // Deno refuses a DNS lookup without net access to the name server, and
  // its message names that server's address: the host's own configuration
  // (its resolv.conf), which no permission lets the guest read. A refusal
  // names none, even where the guest chose the server (it knows that one).
  function hideNameServer(): void {
    const deno = Deno as unknown as Record<PropertyKey, unknown>;
    const original = deno.resolveDns as (
      ...args: unknown[]
    ) => Promise<unknown>;
    const NotCapable = Deno.errors.NotCapable;
    // Captured, not `instanceof`: a guest may give NotCapable a
    // Symbol.hasInstance of its own.
    const refused = NotCapable.prototype;
    const isPrototypeOf = Object.prototype.isPrototypeOf;
    const promiseThen = Promise.prototype.then;
    const refusal = () =>
      new NotCapable(
        "Requires net access to the name server, run again with the --allow-net flag",
      );
    Object.defineProperty(Deno, "resolveDns", {
      value: function resolveDns(...args: unknown[]): Promise<unknown> {
        return apply(promiseThen, apply(original, Deno, args), [
          undefined,
          (error: unknown) => {
            throw apply(isPrototypeOf, refused, [error]) ? refusal() : error;
          },
        ]) as Promise<unknown>;
      },
      writable: true,
      enumerable: true,
      configurable: true,
    });
  }

  // Deno lets a process signal itself without run permission, and run is
  // never granted here, so `kill()` could only reach this process: with
  // SIGTRAP or SIGABRT after printing V8's or Rust's report, a guest would
  // pass its own end for an exhausted heap or stack, which the parent tells
  // by signal. It answers as it does for any other process.
  function refuseSignals(): void {
    const NotCapable = Deno.errors.NotCapable;
    Object.defineProperty(Deno, "kill", {
      value: function kill(): never {
        throw new NotCapable(
          "Requires run access, run again with the --allow-run flag",
        );
      },
      writable: true,
      enumerable: true,
      configurable: true,
    });
  }

  // The characters the text being written may still take. A result's
  // value is counted while it is copied and again while it is written,
  // against its run's result.maxChars, and
  // refused (TOO_LARGE) before its text passes that: the parent could not
  // read it, and a text past V8's longest string cannot even be made here.
  let room = Infinity;
  const TOO_LARGE = {};
  const TOO_DEEP: ResultBound["refusal"] = {
    ok: false,
    code: "STACK_OVERFLOW",
    name: "RangeError",
    message: "The result is nested deeper than the stack allows",
  };

  function take(text: string): string {
    room -= text.length;
    if (room < 0) throw TOO_LARGE;
    return text;
  }

  function serialize(value: unknown): string {
    if (value === null) return take("null");
    switch (typeof value) {
      case "string": {
        // Its quotes and at least its length: refused before it is copied.
        if (value.length + 2 > room) throw TOO_LARGE;
        let text: string;
        try {
          text = stringify(value);
        } catch {
          // Escapes took it past V8's longest string: a string's only error.
          throw TOO_LARGE;
        }
        return take(text);
      }
      case "number":
        return take(numberIsFinite(value) ? "" + value : "null");
      case "boolean":
        return take(value ? "true" : "false");
      case "object": {
        if (isArray(value)) {
          let out = take("[");
          for (let i = 0; i < value.length; i++) {
            out += (i === 0 ? "" : take(",")) + serialize(value[i]);
          }
          return out + take("]");
        }
        const record = value as Record<string, unknown>;
        const names = keys(record);
        let out = take("{");
        let first = true;
        for (let i = 0; i < names.length; i++) {
          const name = names[i]!;
          const item = record[name];
          if (item === undefined) continue;
          out += (first ? "" : take(",")) + serialize(name) + take(":") +
            serialize(item);
          first = false;
        }
        return out + take("}");
      }
      default:
        return take("null");
    }
  }

  // A result frame's text. The value is written alone, so the bound counts
  // its text and nothing of the envelope; a longer value is answered with
  // the bound's refusal, with the logs already sent.
  function resultText(
    outcome: Record<string, unknown>,
    bound: ResultBound,
  ): string {
    if (outcome.ok !== true) return serialize({ t: "result", outcome });
    room = bound.maxChars;
    let refusal = bound.refusal;
    try {
      return '{"t":"result","outcome":{"ok":true,"value":' +
        serialize(outcome.value) + "}}";
    } catch (thrown) {
      // A value the realm could copy may still be too deep for this
      // recursion: V8's frames are larger until its compiler has run, so
      // where the stack ends moves from run to run. It is the stack
      // overflow it is, as the worker tier answers a value it cannot post.
      if (marshallers.isStackOverflow(thrown)) refusal = TOO_DEEP;
      else if (thrown !== TOO_LARGE) throw thrown;
    } finally {
      room = Infinity;
    }
    return serialize({ t: "result", outcome: refusal });
  }

  // Read the payload, one line, synchronously: the stream machinery costs
  // milliseconds to start, and there is nothing else to do until it is in.
  const decoder = new TextDecoder();
  const buffer = new Uint8Array(64 * 1024);
  // Only each new piece is looked at for the line's end: asking the whole
  // text, which a large source makes of many pieces, took time quadratic
  // in its length.
  const pieces: string[] = [];
  for (;;) {
    const read = stdin.readSync(buffer);
    if (read === null) break;
    const piece = decoder.decode(buffer.subarray(0, read), { stream: true });
    pieces.push(piece);
    if (piece.endsWith("\n")) break;
  }
  pieces.push(decoder.decode());
  const payload = parse(pieces.join("")) as ProcessPayload & {
    context: never;
  };
  // The parent died before the child could learn of it, such as before
  // `setpriv` set the parent-death signal: nobody waits for an answer.
  if (Deno.ppid !== payload.parent) exit(0);
  const nonce = payload.nonce;
  // Read before guest code runs, which may put getters on prototypes.
  const bound: ResultBound = {
    maxChars: payload.result.maxChars,
    refusal: payload.result.refusal,
  };
  pieces.length = 0;

  // Frames are written after guest code ran, which may have replaced the
  // typed arrays' getters and methods (or their species): read the bytes
  // through getters captured before, and view them with the constructor.
  function frame(message: Record<string, unknown>): void {
    writeFrame(serialize(message));
  }

  function writeFrame(text: string): void {
    const bytes = encode(nonce + text + "\n");
    const buffer = apply(bufferOf, bytes, []) as ArrayBuffer;
    const start = apply(byteOffsetOf, bytes, []) as number;
    const total = apply(byteLengthOf, bytes, []) as number;
    let offset = 0;
    while (offset < total) {
      offset += writeSync(
        new Uint8ArrayCtor(buffer, start + offset, total - offset),
      );
    }
  }

  // The parent keeps stdin open while the run lasts. A pending read keeps the
  // event loop alive while the guest awaits something that never settles,
  // and ends the process when the parent is gone and stdin reaches its end.
  (async () => {
    const rest = new Uint8Array(1024);
    while ((await stdin.read(rest)) !== null) {
      // Nothing more is expected.
    }
    exit(0);
  })().catch(() => {});
  frame({ t: "started" });
  // Whatever happens here, the process ends: a child that threw while it
  // answered would otherwise wait, silent, for its run's timeout.
  const answer = (outcome: Record<string, unknown>): void => {
    try {
      writeFrame(resultText(outcome, bound));
    } catch {
      frame({ t: "result", outcome: REALM_FAILURE });
    } finally {
      exit(0);
    }
  };
  try {
    const parseOnly = payload.parseOnly === true;
    const marked = mark(payload.source, parseOnly);
    const url = createObjectUrl(
      new BlobConstructor([marked.text], { type: "text/javascript" }),
    );
    const answered = realm.run(
      {
        url,
        marker: marked.marker,
        line: marked.line,
        shift: marked.shift,
        parseOnly,
      },
      payload.context,
      payload.maxLogBytes,
      (level, message) => frame({ t: "log", level, message }),
      bound,
    );
    // Through the `then` captured before guest code ran, which may have
    // replaced Promise.prototype.then.
    apply(promiseThen, answered, [
      (realmAnswer: RealmAnswer) =>
        answer(realmAnswer.outcome as unknown as Record<string, unknown>),
      () => answer(REALM_FAILURE),
    ]);
  } catch {
    answer(REALM_FAILURE);
  }
}
