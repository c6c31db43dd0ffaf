/**
 * An incremental `text/event-stream` parser following the WHATWG HTML
 * "Server-sent events" interpretation rules, with no dependency on
 * EventSource, so it runs in browsers and Node alike.
 *
 * - lines end with CRLF, LF or CR, also when a CRLF pair is split across
 *   two chunks;
 * - a leading UTF-8 BOM is dropped;
 * - `data:` lines accumulate (joined with "\n");
 * - comment lines (`: ping`) are reported through `onComment` only;
 * - an event with no `data:` line is not dispatched (as EventSource does);
 * - `id:` values containing NUL are ignored; `retry:` must be all digits;
 * - a frame left incomplete when the stream ends is discarded;
 * - arbitrarily long lines are collected piecewise, so a line split over
 *   many chunks costs linear time.
 */

/** One dispatched event. */
export interface SSEFrame {
  /** The `event:` field, or `"message"` when the frame had none. */
  event: string;
  /** The `data:` lines joined with `"\n"`. */
  data: string;
  /**
   * The `id:` field of this frame, or `undefined` when the frame itself had
   * no `id:` line (Tether's control frames carry none).
   */
  id: string | undefined;
  /** The stream's last event id buffer after this frame (EventSource's `lastEventId`). */
  lastEventId: string;
  /** A `retry:` value that arrived in this frame, if any. */
  retry: number | undefined;
}

export interface SSEParserOptions {
  /** Called for every dispatched frame. */
  onEvent: (frame: SSEFrame) => void;
  /** Called for every comment line with the text after the colon (leading space removed). */
  onComment?: (comment: string) => void;
  /** Called for every valid `retry:` field. */
  onRetry?: (ms: number) => void;
  /**
   * The longest line (in UTF-16 code units) accepted; a longer one throws
   * `SSEParseError` from `feed`. Default: unlimited.
   */
  maxLineLength?: number;
}

/** Thrown by `SSEParser.feed` when a line exceeds `maxLineLength`. */
export class SSEParseError extends Error {
  override readonly name = 'SSEParseError';
}

const LINE_END = /\r\n|\r|\n/g;

export class SSEParser {
  #opts: SSEParserOptions;
  #pieces: string[] = [];
  #pieceLength = 0;
  #pendingCR = false;
  #started = false;
  #data: string[] = [];
  #hasData = false;
  #event = '';
  #id: string | undefined = undefined;
  #lastEventId = '';
  #retry: number | undefined = undefined;
  #frameHasFields = false;

  constructor(opts: SSEParserOptions) {
    this.#opts = opts;
  }

  /** The last event id buffer (persists across frames, as in EventSource). */
  get lastEventId(): string {
    return this.#lastEventId;
  }

  /** Feeds the next decoded chunk of the stream. */
  feed(chunk: string): void {
    if (chunk.length === 0) return;
    let start = 0;
    if (!this.#started) {
      this.#started = true;
      if (chunk.charCodeAt(0) === 0xfeff) start = 1;
    }
    if (this.#pendingCR) {
      this.#pendingCR = false;
      if (chunk.charCodeAt(start) === 0x0a) start += 1; // the LF of a split CRLF
    }
    LINE_END.lastIndex = start;
    for (;;) {
      const m = LINE_END.exec(chunk);
      if (m === null) break;
      const end = m.index;
      const piece = chunk.slice(start, end);
      let line: string;
      if (this.#pieces.length > 0) {
        this.#pieces.push(piece);
        this.#checkLength(this.#pieceLength + piece.length);
        line = this.#pieces.join('');
        this.#pieces = [];
        this.#pieceLength = 0;
      } else {
        this.#checkLength(piece.length);
        line = piece;
      }
      start = end + m[0].length;
      if (m[0] === '\r' && start === chunk.length) {
        // The LF of a CRLF may start the next chunk.
        this.#pendingCR = true;
      }
      this.#line(line);
    }
    if (start < chunk.length) {
      const rest = chunk.slice(start);
      this.#pieceLength += rest.length;
      this.#checkLength(this.#pieceLength);
      this.#pieces.push(rest);
    }
  }

  /**
   * Ends the stream: an incomplete frame (no blank line after it) is
   * discarded, as EventSource does. The parser can then be reused.
   */
  end(): void {
    this.#pieces = [];
    this.#pieceLength = 0;
    this.#pendingCR = false;
    this.#started = false;
    this.#resetFrame();
  }

  /** Clears the whole state, including the last event id. */
  reset(): void {
    this.end();
    this.#lastEventId = '';
  }

  #checkLength(n: number): void {
    const max = this.#opts.maxLineLength;
    if (max !== undefined && n > max) {
      this.#pieces = [];
      this.#pieceLength = 0;
      throw new SSEParseError(`SSE line longer than ${max} characters`);
    }
  }

  #resetFrame(): void {
    this.#data = [];
    this.#hasData = false;
    this.#event = '';
    this.#id = undefined;
    this.#retry = undefined;
    this.#frameHasFields = false;
  }

  #line(line: string): void {
    if (line.length === 0) {
      this.#dispatch();
      return;
    }
    if (line.charCodeAt(0) === 0x3a /* : */) {
      if (this.#opts.onComment) {
        const text = line.charCodeAt(1) === 0x20 ? line.slice(2) : line.slice(1);
        this.#opts.onComment(text);
      }
      return;
    }
    const colon = line.indexOf(':');
    let field: string;
    let value: string;
    if (colon < 0) {
      field = line;
      value = '';
    } else {
      field = line.slice(0, colon);
      value = line.charCodeAt(colon + 1) === 0x20 ? line.slice(colon + 2) : line.slice(colon + 1);
    }
    switch (field) {
      case 'data':
        this.#data.push(value);
        this.#hasData = true;
        this.#frameHasFields = true;
        break;
      case 'event':
        this.#event = value;
        this.#frameHasFields = true;
        break;
      case 'id':
        if (!value.includes('\u0000')) {
          this.#id = value;
          this.#lastEventId = value;
        }
        this.#frameHasFields = true;
        break;
      case 'retry':
        if (/^[0-9]+$/.test(value)) {
          const ms = Number(value);
          this.#retry = ms;
          this.#opts.onRetry?.(ms);
        }
        this.#frameHasFields = true;
        break;
      default:
        // Unknown fields are ignored.
        break;
    }
  }

  #dispatch(): void {
    if (!this.#frameHasFields) return;
    if (!this.#hasData) {
      // EventSource dispatches nothing for a frame without data (the id
      // still updates the last event id buffer).
      this.#resetFrame();
      return;
    }
    const frame: SSEFrame = {
      event: this.#event === '' ? 'message' : this.#event,
      data: this.#data.join('\n'),
      id: this.#id,
      lastEventId: this.#lastEventId,
      retry: this.#retry,
    };
    this.#resetFrame();
    this.#opts.onEvent(frame);
  }
}

/**
 * Parses a complete `text/event-stream` body (or any prefix of one) into
 * frames; a trailing frame without its terminating blank line is dropped.
 */
export function parseSSE(text: string): SSEFrame[] {
  const frames: SSEFrame[] = [];
  const p = new SSEParser({ onEvent: (f) => frames.push(f) });
  p.feed(text);
  p.end();
  return frames;
}
