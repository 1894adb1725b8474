/**
 * The framing of messages between the host and a plugin realm, one line
 * each: a kind letter and a number, a tab, a short name, a tab, and then
 * JSON text as it is, up to the newline. For example
 * `I7\thandleRequest\t{"url":...}\n` asks the realm to run invocation 7.
 *
 * The fixed fields are read by position, so neither side parses or builds
 * a JSON header per message, and the payload is never escaped into a
 * string: JSON text only holds a raw newline as whitespace, which becomes a
 * space. A name that holds a tab or newline (or starts with `"`) travels as
 * a JSON string.
 *
 * Its functions are self-contained: the realm gets their source text.
 *
 * @module
 */

/**
 * Receives one decoded message.
 *
 * @param kind The kind letter.
 * @param id The number: an invocation or proxy call id, or 0.
 * @param name The name field, `""` when empty.
 * @param json The JSON text, `""` when empty. Not checked: parse it.
 */
export type FrameHandler = (
  kind: string,
  id: number,
  name: string,
  json: string,
) => void;

/**
 * Encodes one message as a line, with its final newline: `kind` is one
 * letter, `id` a whole number from 0 up, `name` and `json` may be `""`.
 */
export function encodeFrame(
  kind: string,
  id: number,
  name: string,
  json: string,
): string {
  const safeName = name.indexOf("\t") === -1 && name.indexOf("\n") === -1 &&
      name.charCodeAt(0) !== 34
    ? name
    : JSON.stringify(name);
  // Inside valid JSON a raw newline can only be whitespace.
  const safeJson = json.indexOf("\n") === -1
    ? json
    : json.replaceAll("\n", " ");
  return kind + id + "\t" + safeName + "\t" + safeJson + "\n";
}

/**
 * Makes a decoder that takes text chunks as they arrive and calls `handler`
 * once per complete line, skipping lines without the frame's shape. Given
 * `overflow`, a line longer than `maxLineChars` is not kept: `onOverflow`
 * is called once and the decoder drops everything after it.
 */
export function frameDecoder(
  handler: FrameHandler,
  overflow?: { maxLineChars: number; onOverflow(): void },
): (chunk: string) => void {
  let buffered = "";
  let overflowed = false;

  function decode(text: string, from: number, end: number): void {
    const first = text.indexOf("\t", from);
    if (first === -1 || first >= end || first < from + 2) return;
    const second = text.indexOf("\t", first + 1);
    if (second === -1 || second >= end) return;
    let id = 0;
    for (let i = from + 1; i < first; i++) {
      const digit = text.charCodeAt(i) - 48;
      if (digit < 0 || digit > 9) return;
      id = id * 10 + digit;
    }
    if (id > Number.MAX_SAFE_INTEGER) return;
    let name = text.slice(first + 1, second);
    if (name.charCodeAt(0) === 34) {
      try {
        name = JSON.parse(name);
      } catch {
        return;
      }
      if (typeof name !== "string") return;
    }
    handler(text[from]!, id, name, text.slice(second + 1, end));
  }

  // Whether `length` more characters of one line are too many.
  function overflows(length: number): boolean {
    if (overflow === undefined || length <= overflow.maxLineChars) return false;
    overflowed = true;
    buffered = "";
    overflow.onOverflow();
    return true;
  }

  return (chunk: string): void => {
    if (overflowed) return;
    // Most chunks of a long line hold no newline: keep them as they are.
    if (chunk.indexOf("\n") === -1) {
      if (!overflows(buffered.length + chunk.length)) buffered += chunk;
      return;
    }
    const text = buffered === "" ? chunk : buffered + chunk;
    let from = 0;
    let newline: number;
    try {
      while ((newline = text.indexOf("\n", from)) !== -1) {
        const start = from;
        from = newline + 1;
        if (overflows(newline - start)) return;
        decode(text, start, newline);
      }
    } finally {
      // Kept consistent even when the handler throws.
      if (!overflowed) buffered = from < text.length ? text.slice(from) : "";
    }
    if (buffered.length > 0) overflows(buffered.length);
  };
}

/**
 * The hooks a plugin's context calls (`RealmHooks` of
 * `_context_bootstrap.ts`): each checks its primitive arguments and sends
 * one frame with `send`. `answer` picks the JSON an invocation's outcome
 * sends, or `null` to send nothing.
 */
export function frameHooks(
  send: (kind: string, id: number, name: string, json: string) => boolean,
  answer: (ok: boolean, json: string) => string | null = (_ok, json) => json,
): Record<"call" | "report" | "log", (...args: unknown[]) => boolean> {
  return {
    call: (callId, op, args) =>
      typeof callId === "number" && typeof op === "string" &&
      typeof args === "string" && send("C", callId, op, args),
    report(id, ok, json) {
      if (typeof id !== "number" || typeof json !== "string") return false;
      const text = answer(ok === true, json);
      return text !== null && send(ok === true ? "R" : "E", id, "", text);
    },
    // The context cut the line to what the host keeps and wrote it as
    // JSON text, which the host reads as such.
    log: (level, lineJson) =>
      typeof level === "string" && typeof lineJson === "string" &&
      send("L", 0, level, lineJson),
  };
}

/** The JSON object `json` holds, or `null` for any other text. */
export function parseObject(json: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(json);
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? value as Record<string, unknown>
      : null;
  } catch {
    return null;
  }
}

/** A failure's detail as the frames carry it: `{ code, name, message }`. */
export function failureJson(code: string, name: string, message: string) {
  return JSON.stringify({ code, name, message });
}

/**
 * The failure of plugin source nested deeper than the engine's parser can
 * take, as the frames carry it: the engine's stack ran out, the source
 * itself may be valid. Self-contained, as the realm program carries it.
 *
 * @param engine The engine whose parser ran out of stack: `V8`, `QuickJS`.
 */
export function deepSourceFailureJson(engine: string): string {
  return JSON.stringify({
    code: "STACK_OVERFLOW",
    name: "StackOverflowError",
    message:
      `The plugin source is nested too deep to load: ${engine}'s parser ran out of stack; split the nested expression into named variables or functions`,
  });
}

/**
 * The bytes of base64 text, read as `atob` reads it: what a realm decodes
 * for its context when the context's own decoder is slow.
 *
 * @throws {DOMException} Where `atob` refuses the text.
 */
export function bytesOfBase64(text: string): Uint8Array {
  const latin1 = atob(text);
  const bytes = new Uint8Array(latin1.length);
  for (let i = 0; i < latin1.length; i++) bytes[i] = latin1.charCodeAt(i);
  return bytes;
}

/**
 * The text of base64 UTF-8 bytes, as WHATWG's decoder reads them, or
 * `false` where `atob` refuses the text: a realm's
 * `RealmHooks.textOfBase64`, which every realm lends (it returns a
 * primitive).
 */
export function textOfBase64(text: unknown): string | false {
  if (typeof text !== "string") return false;
  try {
    const latin1 = atob(text);
    const bytes = new Uint8Array(latin1.length);
    for (let i = 0; i < latin1.length; i++) bytes[i] = latin1.charCodeAt(i);
    return new TextDecoder().decode(bytes);
  } catch {
    return false;
  }
}
