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
  let buffer = "";
  let inFrame = false;
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

  function drain(): void {
    for (;;) {
      if (inFrame) {
        const newline = buffer.indexOf("\n");
        if (newline < 0) return;
        const json = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        inFrame = false;
        onFrame(json);
        continue;
      }
      const start = buffer.indexOf(nonce);
      if (start >= 0) {
        raw(buffer.slice(0, start));
        // Guest output cut by a frame ends its line there, to keep order.
        if (line !== "") onRawLine(line);
        line = "";
        buffer = buffer.slice(start + nonce.length);
        inFrame = true;
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
      buffer += text;
      drain();
    },
    end() {
      if (!inFrame) raw(buffer);
      buffer = "";
      inFrame = false;
      if (line !== "") onRawLine(line);
      line = "";
    },
  };
}
