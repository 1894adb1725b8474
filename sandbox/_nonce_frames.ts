/**
 * Splits a process-tier child's stdout into the bootstrap's frames and the
 * guest's own output. A frame is `<nonce><json>\n`; the nonce is a per-run
 * secret guest code never sees, so everything else is guest output, which
 * becomes log lines.
 *
 * @module
 */

/** Receives decoded stdout text. */
export interface FrameParser {
  /** Adds the next piece of stdout. */
  push(text: string): void;
  /** Flushes what is left when stdout ends; an unfinished frame is dropped. */
  end(): void;
}

/**
 * Creates a parser for one run's stdout.
 *
 * @param nonce The run's secret.
 * @param onFrame Receives the JSON text of each frame.
 * @param onRawLine Receives each line of guest output, without its newline.
 * @param maxLineLength The longest line kept whole; longer output is passed
 * on in pieces of this length, so memory stays bounded.
 * @returns The parser.
 */
export function createFrameParser(
  nonce: string,
  onFrame: (json: string) => void,
  onRawLine: (line: string) => void,
  maxLineLength: number,
): FrameParser {
  // Outside a frame: text that may still hold the start of a nonce.
  let buffer = "";
  // Inside a frame: its pieces so far. A large frame (a run's answer)
  // arrives in many pieces, and only each new piece is searched for its
  // end; searching the whole frame again at every piece took time
  // quadratic in its length, and stalled the caller's event loop.
  let frame: string[] | null = null;
  let line = "";

  function raw(text: string): void {
    let rest = text;
    let newline = rest.indexOf("\n");
    while (newline >= 0) {
      onRawLine(line + rest.slice(0, newline));
      line = "";
      rest = rest.slice(newline + 1);
      newline = rest.indexOf("\n");
    }
    line += rest;
    while (line.length > maxLineLength) {
      onRawLine(line.slice(0, maxLineLength));
      line = line.slice(maxLineLength);
    }
  }

  function drain(text: string): void {
    let rest = text;
    for (;;) {
      if (frame !== null) {
        const newline = rest.indexOf("\n");
        if (newline < 0) {
          if (rest !== "") frame.push(rest);
          return;
        }
        frame.push(rest.slice(0, newline));
        const json = frame.join("");
        frame = null;
        rest = rest.slice(newline + 1);
        onFrame(json);
        continue;
      }
      buffer += rest;
      rest = "";
      const start = buffer.indexOf(nonce);
      if (start >= 0) {
        raw(buffer.slice(0, start));
        // Guest output cut by a frame ends its line there, to keep order.
        if (line !== "") onRawLine(line);
        line = "";
        rest = buffer.slice(start + nonce.length);
        buffer = "";
        frame = [];
        continue;
      }
      // Keep a tail that could be the start of a nonce split across pieces.
      const safe = buffer.length - (nonce.length - 1);
      if (safe > 0) {
        raw(buffer.slice(0, safe));
        buffer = buffer.slice(safe);
      }
      return;
    }
  }

  return {
    push(text) {
      drain(text);
    },
    end() {
      if (frame === null) raw(buffer);
      buffer = "";
      frame = null;
      if (line !== "") onRawLine(line);
      line = "";
    },
  };
}
