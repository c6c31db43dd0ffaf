// A real third-party SSE client (the npm `eventsource` package) against a
// real tetherd binary: it must resume exactly at its cursor after the
// daemon is killed and restarted on the same data dir and port.
//
// Run: node --test test/sse/   (TETHERD_BIN overrides ../../bin/tetherd)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EventSource } from 'eventsource';

const here = dirname(fileURLToPath(import.meta.url));
const BIN = process.env.TETHERD_BIN || resolve(here, '../../bin/tetherd');
const TOKEN = 't';
// Safety net against hangs, not a performance assertion.
const DEADLINE_MS = 60_000;

// Every durable event type and control frame (DESIGN.md section 3):
// EventSource dispatches by name only, so each is listened to. The names
// come from the contract's EventType enum, so a new event type is listened
// to without editing this test; one missing would show up as a gap in the
// ids below.
const CONTROL = ['replay_complete', 'resync_required', 'stream_lagged'];
const TYPES = eventTypes().filter((t) => !CONTROL.includes(t));

function eventTypes() {
  const spec = readFileSync(resolve(here, '../../api/openapi.yaml'), 'utf8');
  const block = spec.slice(spec.indexOf('\n    EventType:'));
  const m = /enum:\s*\[([^\]]+)\]/.exec(block);
  assert.ok(m, 'EventType enum in api/openapi.yaml');
  return m[1].split(',').map((t) => t.trim());
}


function freePort() {
  // Below the kernel's ephemeral range: a port it hands out (listen(0))
  // may be taken by an outgoing connection while the daemon is down,
  // and its restart on the same port then fails (EADDRINUSE).
  let lo = 32768;
  try {
    const first = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (first > 11000) lo = first;
  } catch {
    // not Linux: the default
  }
  const attempt = (left) =>
    new Promise((ok, fail) => {
      const srv = createServer();
      srv.unref();
      const port = left > 0 ? 10000 + Math.floor(Math.random() * (lo - 10000)) : 0;
      srv.once('error', (e) => (left > 0 ? ok(attempt(left - 1)) : fail(e)));
      srv.listen(port, '127.0.0.1', () => {
        const addr = srv.address();
        srv.close(() => ok(typeof addr === 'object' && addr ? addr.port : port));
      });
    });
  return attempt(200);
}

async function until(what, cond) {
  const end = Date.now() + DEADLINE_MS;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** A tetherd process on a fixed data dir and port. */
class Daemon {
  constructor(dataDir, port) {
    this.dataDir = dataDir;
    this.base = `http://127.0.0.1:${port}`;
    this.addr = `127.0.0.1:${port}`;
    this.log = '';
  }

  async start() {
    this.proc = spawn(BIN, ['serve', '--data-dir', this.dataDir, '--addr', this.addr, '--token', TOKEN, '--executor', 'standalone'],
      { stdio: ['ignore', 'ignore', 'pipe'] });
    this.proc.stderr.on('data', (b) => { this.log += b; });
    this.exited = new Promise((r) => this.proc.on('exit', r));
    await until('tetherd to answer /health', async () => {
      if (this.proc.exitCode !== null) throw new Error(`tetherd exited ${this.proc.exitCode}:\n${this.log}`);
      try {
        return (await fetch(`${this.base}/health`)).ok;
      } catch {
        return false;
      }
    });
  }

  /** Kills without a chance to clean up: a crash. */
  async kill() {
    if (!this.proc || this.proc.exitCode !== null) return;
    this.proc.kill('SIGKILL');
    await this.exited;
  }

  async request(method, path, body) {
    const res = await fetch(this.base + path, {
      method,
      headers: { Authorization: `Bearer ${TOKEN}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  }
}

/** Parses a complete text/event-stream body into frames. */
function parseFrames(text) {
  const frames = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    const f = {};
    for (const line of block.split(/\r?\n/)) {
      if (line === '' || line.startsWith(':')) continue;
      const i = line.indexOf(':');
      const name = i < 0 ? line : line.slice(0, i);
      const value = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
      f[name] = name === 'data' && f.data !== undefined ? `${f.data}\n${value}` : value;
    }
    if (Object.keys(f).length > 0) frames.push(f);
  }
  return frames;
}

const seqOf = (id) => Number(id.slice(id.lastIndexOf(':') + 1));

test('eventsource resumes at its cursor across a daemon crash and restart', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'tether-sse-data-'));
  const cwd = await mkdtemp(join(tmpdir(), 'tether-sse-cwd-'));
  await writeFile(join(cwd, 'README.md'), '# Fixture\n');
  const port = await freePort();
  let daemon = new Daemon(dataDir, port);
  let es;
  t.after(async () => {
    es?.close();
    await daemon.kill();
    await rm(dataDir, { recursive: true, force: true });
    await rm(cwd, { recursive: true, force: true });
  });
  await daemon.start();

  const created = await daemon.request('POST', '/session', { agentProfileId: 'demo', cwd });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const sid = created.body.id;
  const epoch = created.body.eventEpoch;

  const received = []; // durable events in arrival order: { id, type, data }
  let opens = 0;
  let firstAfterReopen;
  let lastBeforeReopen; // the client's cursor when it reconnected
  const controls = [];
  es = new EventSource(`${daemon.base}/session/${sid}/events`, {
    fetch: (input, init) => fetch(input, { ...init, headers: { ...init.headers, Authorization: `Bearer ${TOKEN}` } }),
  });
  es.addEventListener('open', () => { opens++; });
  for (const type of TYPES) {
    es.addEventListener(type, (ev) => {
      if (opens >= 2 && firstAfterReopen === undefined) {
        firstAfterReopen = ev.lastEventId;
        lastBeforeReopen = received.at(-1)?.id;
      }
      received.push({ id: ev.lastEventId, type, data: ev.data });
    });
  }
  for (const type of CONTROL) {
    es.addEventListener(type, (ev) => controls.push({ type, data: JSON.parse(ev.data), opens }));
  }

  const turnDone = (promptId) => received.some((e) => e.type.startsWith('turn.') && e.type !== 'turn.started'
    && e.type !== 'turn.queued' && JSON.parse(e.data).promptId === promptId);

  const p1 = await daemon.request('POST', `/session/${sid}/prompt`, { prompt: [{ type: 'text', text: '/stream 50' }], promptId: 'p1' });
  assert.equal(p1.status, 202, JSON.stringify(p1.body));
  await until('the first turn to end on the stream', () => turnDone('p1'));
  const beforeCrash = received.at(-1).id;

  // Force the disconnect: crash the daemon, start it again on the same
  // data dir and port. EventSource reconnects by itself with Last-Event-ID.
  await daemon.kill();
  daemon = new Daemon(dataDir, port);
  await daemon.start();
  await until('EventSource to reconnect', () => opens >= 2);
  await until('the replay after reconnecting', () => controls.some((c) => c.type === 'replay_complete' && c.opens >= 2));

  const p2 = await daemon.request('POST', `/session/${sid}/prompt`, { prompt: [{ type: 'text', text: '/stream 50' }], promptId: 'p2' });
  assert.equal(p2.status, 202, JSON.stringify(p2.body));
  await until('the second turn to end on the stream', () => turnDone('p2'));

  assert.deepEqual(controls.filter((c) => c.type !== 'replay_complete'), [], 'no resync or lag expected');
  // Exactly at the cursor: the first event after the reconnect follows
  // the last one the client had (events after the turn's end, such as
  // the session's state change, may still arrive before the crash).
  assert.ok(seqOf(lastBeforeReopen) >= seqOf(beforeCrash), `cursor ${lastBeforeReopen} behind ${beforeCrash}`);
  assert.equal(seqOf(firstAfterReopen), seqOf(lastBeforeReopen) + 1,
    `first event after reconnect ${firstAfterReopen}, last before it ${lastBeforeReopen} (turn ended at ${beforeCrash})`);
  // No gap, no duplicate, one epoch.
  received.forEach((e, i) => assert.equal(e.id, `${epoch}:${i + 1}`, `event ${i} (${e.type})`));

  // And what the client holds is the log, as a fresh replay shows it.
  const res = await fetch(`${daemon.base}/session/${sid}/events?follow=false`, { headers: { Authorization: `Bearer ${TOKEN}` } });
  assert.equal(res.status, 200);
  const log = parseFrames(await res.text()).filter((f) => f.id !== undefined);
  const prefix = log.slice(0, received.length).map((f) => ({ id: f.id, type: f.event, data: f.data }));
  assert.deepEqual(received, prefix);
  assert.ok(received.some((e) => e.type === 'message.chunk'), 'message chunks on the stream');
  t.diagnostic(`${received.length} events over ${opens} connections; last before the crash ${beforeCrash}, first after ${firstAfterReopen}`);
});
