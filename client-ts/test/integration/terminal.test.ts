// The terminal API through the SDK against the real tetherd: a shell typed
// into over the WebSocket (the ws package, as in Node) and read back, a
// reconnect from the offset reached that misses nothing, the REST calls,
// and the exit code.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { TetherProblem, type TetherClient as TC, type WebSocketLike } from '../../src/index.js';
import { Daemon } from '../helpers/daemon.js';
import { clientFor } from '../helpers/util.js';

let d: Daemon;
let c: TC;

beforeAll(async () => {
  d = await Daemon.start();
  c = clientFor(d);
});
afterAll(async () => {
  await d?.dispose();
});

const factory = (url: string, headers: Record<string, string>) => new WebSocket(url, { headers }) as unknown as WebSocketLike;

/** Collects a connection's output until it contains `want`. */
function until(get: () => string, want: string, timeoutMs = 10_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const tick = () => {
      if (get().includes(want)) return resolve();
      if (Date.now() - t0 > timeoutMs) return reject(new Error(`no ${JSON.stringify(want)} in ${JSON.stringify(get())}`));
      setTimeout(tick, 10);
    };
    tick();
  });
}

describe('tetherd: terminals', () => {
  it('types into a shell over the WebSocket and reads it back, across a reconnect', async () => {
    const s = await c.createSession({ agentProfileId: 'demo', cwd: d.cwd, title: 'terminal' });
    const terms = c.session(s.id).terminals;
    const t = await terms.open({ cols: 90, rows: 25 });
    expect(t.exited).toBe(false);
    let out = '';
    let exit: number | undefined;
    const dec = new TextDecoder();
    const conn = terms.attach(t.id, { webSocket: factory, onData: (b) => (out += dec.decode(b, { stream: true })) });
    conn.send('echo "S""DK=$((20+22))"\n');
    await until(() => out, 'SDK=42');
    const end = conn.end;
    conn.close();

    const again = terms.attach(t.id, {
      offset: end,
      webSocket: factory,
      onData: (b) => (out += dec.decode(b, { stream: true })),
      onExit: (code) => (exit = code),
    });
    again.send('echo "A""GAIN"; exit 7\n');
    await until(() => out, 'AGAIN\r\n');
    await until(() => (exit === undefined ? '' : String(exit)), '7');
    expect(out.split('SDK=42').length).toBe(2); // the reconnect repeated nothing

    const [listed] = (await terms.list()).terminals;
    expect(listed).toMatchObject({ id: t.id, exited: true, exitCode: 7 });
    await terms.close(t.id);
    const err = await terms.read(t.id).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TetherProblem);
    expect((err as TetherProblem).code).toBe('terminal_not_found');
  });

  it('works without a WebSocket: write, then read by offset with a wait', async () => {
    const s = await c.createSession({ agentProfileId: 'demo', cwd: d.cwd });
    const terms = c.session(s.id).terminals;
    const t = await terms.open();
    await terms.write(t.id, 'echo "R""EST=ok"\n');
    let out = '';
    let offset = 0;
    while (!out.includes('REST=ok')) {
      const r = await terms.read(t.id, { offset, wait: 2000 });
      out += Buffer.from(r.data, 'base64').toString();
      offset = r.end;
    }
    expect((await terms.resize(t.id, 120, 40)).cols).toBe(120);
    await terms.close(t.id);
  });

  it('opens the WebSocket with a ticket where no header can be sent (a browser), never with the token in the URL', async () => {
    const s = await c.createSession({ agentProfileId: 'demo', cwd: d.cwd });
    const terms = c.session(s.id).terminals;
    const t = await terms.open();
    const urls: string[] = [];
    // A browser's WebSocket: a URL and nothing else.
    class BrowserWebSocket extends WebSocket {
      constructor(url: string) {
        urls.push(url);
        super(url);
      }
    }
    const g = globalThis as { WebSocket?: unknown };
    const saved = g.WebSocket;
    g.WebSocket = BrowserWebSocket;
    try {
      let out = '';
      const dec = new TextDecoder();
      const conn = terms.attach(t.id, { onData: (b) => (out += dec.decode(b, { stream: true })) });
      conn.send('echo "TI""CKET=ok"\n');
      await until(() => out, 'TICKET=ok');
      conn.close();
    } finally {
      g.WebSocket = saved;
    }
    expect(urls).toHaveLength(1);
    expect(urls[0]).toMatch(/\/terminals\/[^/]+\/ws\?ticket=[\w-]+&offset=0$/);
    expect(urls[0]).not.toContain(d.token);

    // Without the ticket (and without the header) the WebSocket is refused.
    const refused = await new Promise<number>((resolve) => {
      const ws = new WebSocket(`${d.baseUrl.replace(/^http/, 'ws')}/session/${s.id}/terminals/${t.id}/ws`);
      ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.on('open', () => resolve(101));
    });
    expect(refused).toBe(401);

    // A ticket for a terminal the session does not have is refused.
    const err = await c.createStreamTicket({ sessionId: s.id, terminalId: 'nope' }).catch((e: unknown) => e);
    expect((err as TetherProblem).code).toBe('terminal_not_found');
    await terms.close(t.id);
  });
});
