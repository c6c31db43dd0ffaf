import { createServer, connect, type Server, type Socket } from 'node:net';
import { expect } from 'vitest';
import { parseCursor, TetherClient, type EventStream, type StreamEvent } from '../../src/index.js';
import type { Daemon } from './daemon.js';

export function clientFor(d: Daemon | { baseUrl: string; token: string }, baseUrl?: string): TetherClient {
  return new TetherClient({
    baseUrl: baseUrl ?? d.baseUrl,
    token: d.token,
    timeoutMs: 20_000,
    streamDefaults: { backoff: { initialMs: 50, maxMs: 500 } },
  });
}

export const seqOf = (id: string): number => parseCursor(id)!.seq;

/** The durable ids among events. */
export function durableIds(evs: StreamEvent[]): string[] {
  return evs.flatMap((e) => ('id' in e && e.id ? [e.id] : []));
}

/** Asserts the ids are exactly epoch:from, epoch:from+1, ... (no gap, no duplicate). */
export function expectContiguous(ids: string[], from = 1): void {
  expect(ids.length).toBeGreaterThan(0);
  const epoch = parseCursor(ids[0]!)!.epoch;
  expect(ids).toEqual(ids.map((_, i) => `${epoch}:${from + i}`));
}

/** Reads events until `stop` says so (inclusive), with a safety deadline. */
export async function readUntil(
  stream: EventStream,
  stop: (e: StreamEvent, all: StreamEvent[]) => boolean,
  opts: { timeoutMs?: number; onEvent?: (e: StreamEvent, all: StreamEvent[]) => void | Promise<void> } = {},
): Promise<StreamEvent[]> {
  const all: StreamEvent[] = [];
  const timer = setTimeout(() => stream.close(), opts.timeoutMs ?? 30_000);
  try {
    for await (const e of stream) {
      all.push(e);
      await opts.onEvent?.(e, all);
      if (stop(e, all)) return all;
    }
  } finally {
    clearTimeout(timer);
  }
  throw new Error(`stream ended before the condition held; got ${all.map((e) => e.type).join(', ')}`);
}

export const isTerminalFor = (promptId: string) => (e: StreamEvent) =>
  (e.type === 'turn.completed' || e.type === 'turn.failed' || e.type === 'turn.cancelled' || e.type === 'turn.interrupted') &&
  e.data.promptId === promptId;

/** Every durable event of a session's log, read with follow=false. */
export async function fullLog(c: TetherClient, sessionId: string): Promise<string[]> {
  const all: StreamEvent[] = [];
  for await (const e of c.session(sessionId).events({ follow: false })) all.push(e);
  return durableIds(all);
}

/**
 * A TCP proxy in front of the daemon whose connections can be cut from the
 * server side at will; it records each connection's request head.
 */
export class CuttingProxy {
  port = 0;
  heads: string[] = [];
  #server: Server;
  #sockets = new Set<Socket>();

  constructor(private targetPort: number) {
    this.#server = createServer((client) => {
      const upstream = connect(this.targetPort, '127.0.0.1');
      this.#sockets.add(client);
      this.#sockets.add(upstream);
      let first = true;
      client.on('data', (b) => {
        if (first) {
          this.heads.push(b.toString('latin1'));
          first = false;
        }
      });
      client.pipe(upstream);
      upstream.pipe(client);
      const end = () => {
        client.destroy();
        upstream.destroy();
        this.#sockets.delete(client);
        this.#sockets.delete(upstream);
      };
      client.on('close', end);
      upstream.on('close', end);
      client.on('error', end);
      upstream.on('error', end);
    });
  }

  async listen(): Promise<this> {
    await new Promise<void>((r) => this.#server.listen(0, '127.0.0.1', r));
    const a = this.#server.address();
    this.port = typeof a === 'object' && a ? a.port : 0;
    return this;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Cuts every open connection (the server side goes away). */
  cutAll(): number {
    const n = this.#sockets.size;
    for (const s of this.#sockets) s.destroy();
    this.#sockets.clear();
    return n;
  }

  async close(): Promise<void> {
    this.cutAll();
    await new Promise<void>((r) => this.#server.close(() => r()));
  }
}

export function lastEventIdOf(head: string): string | undefined {
  const m = /\r\nlast-event-id: *([^\r\n]*)/i.exec(head);
  return m?.[1];
}
