// A terminal link reconnects from the last byte offset it received, so a
// dropped connection (reload, network, daemon restart) misses nothing and
// repeats nothing; keystrokes typed meanwhile wait; an exited shell or a
// terminal that is gone is not reconnected.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { TerminalLink, type TerminalApi, type TerminalAttachOptions, type TerminalLinkState } from '../src/state/terminal-link';

/** One attach of the fake: what it was asked and what it was sent. */
interface FakeConn {
  offset: number;
  opts: TerminalAttachOptions;
  sent: (string | Uint8Array)[];
  sizes: [number, number][];
  closed: boolean;
}

class FakeTerminals implements TerminalApi {
  conns: FakeConn[] = [];
  open = () => Promise.resolve({ id: 't1', exited: false });
  list = () => Promise.resolve({ terminals: [] });
  close = () => Promise.resolve(undefined);
  attach(_id: string, opts: TerminalAttachOptions) {
    const c: FakeConn = { offset: opts.offset ?? 0, opts, sent: [], sizes: [], closed: false };
    this.conns.push(c);
    return {
      get end() {
        return 0;
      },
      send: (d: string | Uint8Array) => void c.sent.push(d),
      resize: (cols: number, rows: number) => void c.sizes.push([cols, rows]),
      close: () => {
        c.closed = true;
      },
    };
  }
  get last(): FakeConn {
    return this.conns[this.conns.length - 1]!;
  }
}

const bytes = (s: string) => new TextEncoder().encode(s);
const text = (chunks: Uint8Array[]) => chunks.map((c) => new TextDecoder().decode(c)).join('');

let api: FakeTerminals;
let shown: Uint8Array[];
let states: [TerminalLinkState, number | undefined][];
let link: TerminalLink;

beforeEach(() => {
  vi.useFakeTimers();
  api = new FakeTerminals();
  shown = [];
  states = [];
  link = new TerminalLink(api, 't1', { onData: (d) => shown.push(d), onState: (s, code) => states.push([s, code]) }, { initialMs: 100, maxMs: 400 });
});

afterEach(() => {
  link.dispose();
  vi.useRealTimers();
});

describe('TerminalLink', () => {
  it('starts from offset 0 (what the executor kept) and shows output as it comes', () => {
    expect(api.conns).toHaveLength(1);
    expect(api.last.offset).toBe(0);
    api.last.opts.onOpen?.(0);
    api.last.opts.onData?.(bytes('hello '), 0);
    api.last.opts.onData?.(bytes('world'), 6);
    expect(text(shown)).toBe('hello world');
    expect(link.end).toBe(11);
    expect(link.state).toBe('open');
  });

  it('reconnects after a drop from where it stopped, with backoff, and repeats nothing', () => {
    api.last.opts.onOpen?.(0);
    api.last.opts.onData?.(bytes('abc'), 0);
    api.last.opts.onClose?.(1006, '');
    expect(link.state).toBe('reconnecting');
    expect(api.conns).toHaveLength(1);
    vi.advanceTimersByTime(99);
    expect(api.conns).toHaveLength(1);
    vi.advanceTimersByTime(1);
    expect(api.conns).toHaveLength(2);
    expect(api.last.offset).toBe(3);
    // A second drop before it opened waits twice as long.
    api.last.opts.onClose?.(1006, '');
    vi.advanceTimersByTime(199);
    expect(api.conns).toHaveLength(2);
    vi.advanceTimersByTime(1);
    expect(api.conns).toHaveLength(3);
    api.last.opts.onOpen?.(3);
    // Output overlapping what was shown is cut to the new part.
    api.last.opts.onData?.(bytes('bcdef'), 1);
    expect(text(shown)).toBe('abcdef');
    expect(link.state).toBe('open');
  });

  it('keystrokes typed while disconnected are sent once reconnected, the size again too', () => {
    api.last.opts.onOpen?.(0);
    link.resize(100, 30);
    expect(api.last.sizes).toEqual([[100, 30]]);
    api.last.opts.onClose?.(1006, '');
    link.send('ls\r');
    vi.advanceTimersByTime(100);
    expect(api.last.sent).toEqual([]);
    api.last.opts.onOpen?.(0);
    expect(api.last.sizes).toEqual([[100, 30]]);
    expect(api.last.sent).toEqual(['ls\r']);
  });

  it('an exited shell is not reconnected', () => {
    api.last.opts.onOpen?.(0);
    api.last.opts.onExit?.(7);
    api.last.opts.onClose?.(1000, 'the shell exited');
    vi.advanceTimersByTime(10_000);
    expect(api.conns).toHaveLength(1);
    expect(states).toContainEqual(['exited', 7]);
    link.send('ignored');
    expect(api.last.sent).toEqual([]);
  });

  it('a terminal that is gone is not reconnected', () => {
    api.last.opts.onClose?.(1006, 'terminal_not_found');
    vi.advanceTimersByTime(10_000);
    expect(api.conns).toHaveLength(1);
    expect(link.state).toBe('gone');
  });

  it('after dispose, late callbacks of the old connection change nothing', () => {
    const old = api.last;
    link.dispose();
    expect(old.closed).toBe(true);
    old.opts.onData?.(bytes('late'), 0);
    old.opts.onClose?.(1006, '');
    vi.advanceTimersByTime(10_000);
    expect(shown).toEqual([]);
    expect(api.conns).toHaveLength(1);
    expect(link.state).toBe('closed');
  });
});
