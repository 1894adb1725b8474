/**
 * The line framing of a realm process's pipes: one message per line, a
 * JSON header, then (when the message carries JSON text, such as a payload
 * or a result) a tab and that text as it is. JSON text never holds a raw
 * tab or newline, so the payload crosses without being escaped into a
 * string and parsed out again. Text that does hold one (which no
 * `JSON.stringify` output does) travels escaped inside the header instead.
 *
 * Both functions are self-contained: the realm process gets their source
 * text.
 *
 * @module
 */

/** A decoded message: its header and its JSON text, if any. */
export type LineHandler = (
  header: Record<string, unknown>,
  json: string | undefined,
) => void;

/**
 * Encodes one message as a line.
 *
 * @param header The message without its JSON text.
 * @param json The JSON text it carries, if any.
 * @returns The line, with its final newline.
 */
export function encodeLine(
  header: Record<string, unknown>,
  json: string | undefined,
): string {
  if (json === undefined) return JSON.stringify(header) + "\n";
  if (json.indexOf("\n") === -1 && json.indexOf("\t") === -1) {
    return JSON.stringify(header) + "\t" + json + "\n";
  }
  return JSON.stringify({ ...header, json }) + "\n";
}

/**
 * Makes a decoder that takes text chunks as they arrive and calls `handler`
 * once per complete line. Lines that are not a JSON object are skipped.
 *
 * @param handler Receives each message.
 * @returns The function to feed with chunks.
 */
export function lineDecoder(handler: LineHandler): (chunk: string) => void {
  let buffered = "";
  return (chunk: string): void => {
    // Most chunks of a long line hold no newline: keep them as they are.
    if (chunk.indexOf("\n") === -1) {
      buffered += chunk;
      return;
    }
    const text = buffered + chunk;
    let from = 0;
    let newline: number;
    while ((newline = text.indexOf("\n", from)) !== -1) {
      const tab = text.indexOf("\t", from);
      let header: unknown = null;
      let json: string | undefined;
      try {
        if (tab !== -1 && tab < newline) {
          header = JSON.parse(text.slice(from, tab));
          json = text.slice(tab + 1, newline);
        } else {
          header = JSON.parse(text.slice(from, newline));
          const embedded = (header as { json?: unknown } | null)?.json;
          if (typeof embedded === "string") {
            json = embedded;
            delete (header as { json?: unknown }).json;
          }
        }
      } catch {
        header = null;
      }
      from = newline + 1;
      buffered = text.slice(from);
      if (
        typeof header === "object" && header !== null && !Array.isArray(header)
      ) handler(header as Record<string, unknown>, json);
    }
  };
}
