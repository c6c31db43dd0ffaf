import { describe, expect, it } from 'vitest';
import { parseSSE, SSEParser, SSEParseError, type SSEFrame } from '../src/sse.js';

function collect(chunks: string[]): { frames: SSEFrame[]; comments: string[]; retries: number[] } {
  const frames: SSEFrame[] = [];
  const comments: string[] = [];
  const retries: number[] = [];
  const p = new SSEParser({
    onEvent: (f) => frames.push(f),
    onComment: (c) => comments.push(c),
    onRetry: (ms) => retries.push(ms),
  });
  for (const c of chunks) p.feed(c);
  p.end();
  return { frames, comments, retries };
}

/** Every way of cutting `text` into 2 and 3 pieces gives the same frames. */
function allSplits(text: string): string[][] {
  const out: string[][] = [];
  for (let i = 0; i <= text.length; i++) {
    out.push([text.slice(0, i), text.slice(i)]);
    for (let j = i; j <= text.length; j += Math.max(1, Math.floor(text.length / 7))) {
      out.push([text.slice(0, i), text.slice(i, j), text.slice(j)]);
    }
  }
  return out;
}

const TETHER_STREAM =
  'retry: 2000\n\n' +
  'id: ep:1\nevent: session.created\ndata: {"sessionId":"s","state":"CREATED"}\n\n' +
  ': ping\n\n' +
  'id: ep:2\nevent: message.chunk\ndata: {"text":"a\\nb"}\n\n' +
  'event: replay_complete\ndata: {"cursor":"ep:2"}\n\n';

describe('SSEParser', () => {
  it('parses a Tether stream: ids on durable events only, comments, retry', () => {
    const { frames, comments, retries } = collect([TETHER_STREAM]);
    expect(retries).toEqual([2000]);
    expect(comments).toEqual(['ping']);
    expect(frames.map((f) => [f.event, f.id, f.data])).toEqual([
      ['session.created', 'ep:1', '{"sessionId":"s","state":"CREATED"}'],
      ['message.chunk', 'ep:2', '{"text":"a\\nb"}'],
      ['replay_complete', undefined, '{"cursor":"ep:2"}'],
    ]);
    // EventSource's lastEventId persists over an id-less frame.
    expect(frames[2]!.lastEventId).toBe('ep:2');
  });

  it('gives the same frames however the stream is split into chunks', () => {
    const expected = collect([TETHER_STREAM]).frames;
    for (const split of allSplits(TETHER_STREAM)) {
      expect(collect(split).frames).toEqual(expected);
    }
  });

  it('feeds one character at a time', () => {
    expect(collect([...TETHER_STREAM]).frames).toEqual(collect([TETHER_STREAM]).frames);
  });

  it('accepts CRLF, CR and LF line endings, mixed', () => {
    const lf = 'event: a\ndata: 1\n\nevent: b\ndata: 2\n\n';
    const crlf = lf.replace(/\n/g, '\r\n');
    const cr = lf.replace(/\n/g, '\r');
    const mixed = 'event: a\r\ndata: 1\r\revent: b\ndata: 2\r\n\n';
    const want = [
      ['a', '1'],
      ['b', '2'],
    ];
    for (const text of [lf, crlf, cr, mixed]) {
      expect(parseSSE(text).map((f) => [f.event, f.data])).toEqual(want);
    }
  });

  it('treats a CRLF split across chunks as one line break', () => {
    const { frames } = collect(['data: x\r', '\n\r', '\ndata: y\r', '', '\n', '\r\n']);
    expect(frames.map((f) => f.data)).toEqual(['x', 'y']);
  });

  it('treats a lone CR at a chunk end followed by a non-LF as a line break', () => {
    const { frames } = collect(['data: x\r', 'data: y\r', '\r']);
    expect(frames.map((f) => f.data)).toEqual(['x\ny']);
  });

  it('joins multi-line data with \\n and keeps empty data lines', () => {
    const f = parseSSE('data: first\ndata:second\ndata\ndata:  two spaces\n\n');
    expect(f).toHaveLength(1);
    expect(f[0]!.data).toBe('first\nsecond\n\n two spaces');
  });

  it('ignores comments anywhere, including between fields of one frame', () => {
    const { frames, comments } = collect([':hello\nid: e:1\n: mid-frame\nevent: x\ndata: 1\n:\n\n']);
    expect(frames.map((f) => [f.event, f.id, f.data])).toEqual([['x', 'e:1', '1']]);
    expect(comments).toEqual(['hello', 'mid-frame', '']);
  });

  it('does not dispatch frames without data, or blank-line runs', () => {
    const f = parseSSE('\n\n\nevent: lonely\n\nid: e:7\n\nretry: 10\n\ndata: ok\n\n');
    expect(f.map((x) => [x.event, x.id, x.data, x.lastEventId])).toEqual([['message', undefined, 'ok', 'e:7']]);
  });

  it('handles missing ids: frame id undefined, lastEventId carried over', () => {
    const f = parseSSE('id: a:1\ndata: 1\n\ndata: 2\n\nid\ndata: 3\n\n');
    expect(f.map((x) => [x.id, x.lastEventId])).toEqual([
      ['a:1', 'a:1'],
      [undefined, 'a:1'],
      ['', ''], // "id" with no value resets the last event id
    ]);
  });

  it('ignores ids containing NUL and non-numeric retry', () => {
    const { frames, retries } = collect(['id: ok:1\ndata: 1\n\nid: bad\u0000id\nretry: 12x\nretry: 7\ndata: 2\n\n']);
    expect(frames.map((f) => f.id)).toEqual(['ok:1', undefined]);
    expect(frames[1]!.lastEventId).toBe('ok:1');
    expect(retries).toEqual([7]);
    expect(frames[1]!.retry).toBe(7);
  });

  it('strips exactly one space after the colon; no colon means empty value', () => {
    const f = parseSSE('event:x\ndata:   padded \n\nevent\ndata\n\n');
    expect(f.map((x) => [x.event, x.data])).toEqual([
      ['x', '  padded '],
      ['message', ''],
    ]);
  });

  it('ignores unknown fields and field names are case-sensitive', () => {
    const f = parseSSE('Data: no\nDATA: no\nfoo: bar\ndata: yes\nEvent: nope\n\n');
    expect(f.map((x) => [x.event, x.data])).toEqual([['message', 'yes']]);
  });

  it('drops a leading BOM only at the start of the stream', () => {
    const { frames } = collect(['\ufeffdata: 1\n\n', '\ufeffdata: 2\n\n']);
    // The second BOM is part of a field name "\ufeffdata", which is unknown.
    expect(frames.map((f) => f.data)).toEqual(['1']);
  });

  it('discards an incomplete trailing frame at end of stream', () => {
    const f = parseSSE('data: complete\n\ndata: partial\n');
    expect(f.map((x) => x.data)).toEqual(['complete']);
    const g = parseSSE('data: complete\n\ndata: no newline at all');
    expect(g.map((x) => x.data)).toEqual(['complete']);
  });

  it('keeps unicode (split surrogate pairs across chunks are the decoder\'s job; strings stay intact)', () => {
    const text = 'data: {"text":"héllo 👋 世界"}\n\n';
    for (const split of allSplits(text)) {
      expect(collect(split).frames.map((f) => f.data)).toEqual(['{"text":"héllo 👋 世界"}']);
    }
  });

  it('decodes UTF-8 split at any byte with a streaming TextDecoder', () => {
    const bytes = new TextEncoder().encode('id: e:1\ndata: "👋 世界"\n\n');
    for (let i = 0; i <= bytes.length; i++) {
      const frames: SSEFrame[] = [];
      const p = new SSEParser({ onEvent: (f) => frames.push(f) });
      const d = new TextDecoder();
      p.feed(d.decode(bytes.slice(0, i), { stream: true }));
      p.feed(d.decode(bytes.slice(i), { stream: true }));
      p.feed(d.decode());
      expect(frames.map((f) => f.data)).toEqual(['"👋 世界"']);
    }
  });

  it('handles a huge line (8 MiB) split into many small chunks in linear time', () => {
    const big = 'x'.repeat(8 << 20);
    const text = `id: e:9\nevent: message.chunk\ndata: ${big}\n\n`;
    const chunks: string[] = [];
    for (let i = 0; i < text.length; i += 1000) chunks.push(text.slice(i, i + 1000));
    const t0 = Date.now();
    const { frames } = collect(chunks);
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(frames).toHaveLength(1);
    expect(frames[0]!.data.length).toBe(big.length);
    expect(frames[0]!.id).toBe('e:9');
  });

  it('handles many frames in one chunk', () => {
    let text = '';
    for (let i = 1; i <= 10_000; i++) text += `id: e:${i}\nevent: t\ndata: ${i}\n\n`;
    const f = parseSSE(text);
    expect(f).toHaveLength(10_000);
    expect(f[9999]!.id).toBe('e:10000');
  });

  it('enforces maxLineLength when set, even across chunks', () => {
    const p = new SSEParser({ onEvent: () => {}, maxLineLength: 10 });
    p.feed('data: 1234');
    expect(() => p.feed('56789\n')).toThrow(SSEParseError);
    const q = new SSEParser({ onEvent: () => {}, maxLineLength: 10 });
    expect(() => q.feed('data: 123456789')).toThrow(SSEParseError);
  });

  it('survives garbage: binary noise, lone colons, NULs', () => {
    const noise = ':\n:\r\n\u0000\u0001\n\ndata\u0000: x\n\n::::\n\nid: \u0000\n\ndata: after\n\n';
    const f = parseSSE(noise);
    expect(f.map((x) => x.data)).toEqual(['after']);
  });

  it('can be reset and reused', () => {
    const frames: SSEFrame[] = [];
    const p = new SSEParser({ onEvent: (f) => frames.push(f) });
    p.feed('id: a:1\ndata: half');
    p.reset();
    expect(p.lastEventId).toBe('');
    p.feed('data: whole\n\n');
    expect(frames.map((f) => [f.data, f.lastEventId])).toEqual([['whole', '']]);
  });
});
