// A third-party page (another origin: a second loopback port, named in
// tetherd's --cors-origins) opens Tether event streams with the browser's
// native EventSource, authenticated by a stream ticket: fetch with the
// bearer token gets the ticket, the token never goes in a URL.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { appProblems, Daemon, freePort, launchBrowser } from './harness.mjs';

const T = { timeout: 15_000 };

// The page's own code: what a third-party integration would write.
const PAGE = `<!doctype html>
<meta charset="utf-8">
<title>third-party page</title>
<script>
window.streams = [];
// Tether names its events; EventSource delivers only those listened for.
const TYPES = ['session.created', 'session.state_changed', 'session.executor_status', 'turn.queued', 'turn.started',
  'turn.completed', 'message.added', 'message.chunk', 'replay_complete'];
window.watch = (url, types = TYPES) => {
  const es = new EventSource(url);
  const rec = { opens: 0, frames: [], errors: 0, readyState: 0 };
  es.onopen = () => { rec.opens++; rec.readyState = es.readyState; };
  es.onerror = () => { rec.errors++; rec.readyState = es.readyState; };
  for (const t of types) {
    es.addEventListener(t, (e) => rec.frames.push({ event: t, id: t === 'replay_complete' ? '' : e.lastEventId, conn: rec.opens }));
  }
  window.streams.push({ es, rec });
  return window.streams.length - 1;
};
window.rec = (i) => JSON.parse(JSON.stringify(window.streams[i].rec));
window.ticket = async (base, token, body) => {
  const r = await fetch(base + '/events/tickets', {
    method: 'POST',
    headers: { Authorization: 'Bearer ' + token, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!r.ok) throw new Error('ticket: ' + r.status + ' ' + (await r.text()));
  return r.json();
};
</script>
<p>A page on another origin.</p>`;

let daemon;
let browser;
let site;
let page;

before(async () => {
  const port = await freePort();
  site = createServer((_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end(PAGE);
  });
  await new Promise((ok) => site.listen(port, '127.0.0.1', ok));
  const origin = `http://127.0.0.1:${port}`;
  daemon = await Daemon.start({ args: ['--cors-origins', origin] });
  browser = await launchBrowser();
  page = await browser.newPage();
  await page.goto(`${origin}/`);
  assert.notEqual(new URL(page.url()).origin, new URL(daemon.base).origin, 'the page must be on another origin');
});

after(async () => {
  await page?.evaluate(() => window.streams.forEach((s) => s.es.close())).catch(() => {});
  await browser?.close();
  await daemon?.stop();
  await new Promise((ok) => (site ? site.close(ok) : ok()));
});

const rec = (i) => page.evaluate((n) => window.rec(n), i);

// Every event type of the contract (api/openapi.yaml, EventType, read from
// the contract itself so that a new type needs no edit here), for a page
// that must receive a session's whole log: the durable types and
// replay_complete.
const ALL_TYPES = (() => {
  const contract = readFileSync(new URL('../../api/openapi.yaml', import.meta.url), 'utf8');
  const m = contract.match(/^ {4}EventType:\n(?:.*\n)*? {6}enum: \[([^\]]*)\]/m);
  assert.ok(m, 'the contract declares EventType as a one-line enum');
  return m[1].split(',').map((t) => t.trim()).filter((t) => t !== 'resync_required' && t !== 'stream_lagged');
})();

async function newSession() {
  return daemon.api('POST', '/session', { agentProfileId: 'demo', cwd: daemon.workspace });
}

describe('Stream tickets from another origin', { concurrency: false }, () => {
  test('a ticket opens a native EventSource: replay, then live events', { timeout: 60_000 }, async () => {
    const s = await newSession();
    const t = await page.evaluate(([b, tok, sid]) => window.ticket(b, tok, { sessionId: sid }), [daemon.base, daemon.token, s.id]);
    assert.ok(!t.url.includes(daemon.token), 'the stream URL carries no token');
    const i = await page.evaluate((url) => window.watch(url), daemon.base + t.url);
    await page.waitForFunction((n) => window.rec(n).frames.some((f) => f.event === 'replay_complete'), i, T);
    const replay = await rec(i);
    assert.equal(replay.opens, 1);
    assert.ok(replay.frames.some((f) => f.event === 'session.created'), `replay: ${JSON.stringify(replay.frames)}`);

    await daemon.api('POST', `/session/${s.id}/prompt`, { prompt: [{ type: 'text', text: 'hello over a ticket' }] });
    await page.waitForFunction((n) => window.rec(n).frames.some((f) => f.event === 'turn.completed'), i, T);
    const ids = (await rec(i)).frames.filter((f) => f.id).map((f) => f.id);
    assert.equal(new Set(ids).size, ids.length, `no event twice: ${ids}`);
  });

  test('EventSource reconnects with the same URL and Last-Event-ID: the ticket reopens its stream, nothing twice', { timeout: 60_000 }, async () => {
    const s = await newSession();
    const t = await page.evaluate(([b, tok, sid]) => window.ticket(b, tok, { sessionId: sid }), [daemon.base, daemon.token, s.id]);
    // follow=false ends each connection after its replay, so EventSource
    // reconnects by itself (after the daemon's retry: 2000).
    const i = await page.evaluate((url) => window.watch(url), `${daemon.base}${t.url}&follow=false`);
    await page.waitForFunction((n) => window.rec(n).frames.filter((f) => f.event === 'replay_complete').length >= 2, i, T);
    const r = await rec(i);
    await page.evaluate((n) => window.streams[n].es.close(), i);
    assert.ok(r.opens >= 2, `reconnected: ${r.opens} opens`);
    const first = r.frames.filter((f) => f.id && f.conn === 1);
    const later = r.frames.filter((f) => f.id && f.conn > 1);
    assert.ok(first.length > 0, 'the first connection replayed the log');
    // The session's agent may still be starting, so later connections can
    // carry new events; none is one the first connection already had.
    const seq = (id) => Number(id.slice(id.lastIndexOf(':') + 1));
    const lastFirst = seq(first.at(-1).id);
    assert.deepEqual(later.filter((f) => seq(f.id) <= lastFirst), [], 'a reconnect resumes after Last-Event-ID: nothing replayed twice');
    const ids = r.frames.filter((f) => f.id).map((f) => f.id);
    assert.equal(new Set(ids).size, ids.length, `no event twice: ${ids}`);
  });

  test('a ticket outlives a kill -9 of tetherd: EventSource reconnects to the restarted daemon and gets every event once', { timeout: 90_000 }, async () => {
    const s = await newSession();
    const t = await page.evaluate(([b, tok, sid]) => window.ticket(b, tok, { sessionId: sid }), [daemon.base, daemon.token, s.id]);
    const i = await page.evaluate(([url, types]) => window.watch(url, types), [daemon.base + t.url, ALL_TYPES]);
    const completed = (n) => page.waitForFunction(
      ([k, want]) => window.rec(k).readyState === 2 || window.rec(k).frames.filter((f) => f.event === 'turn.completed').length >= want,
      [i, n], T);
    await daemon.api('POST', `/session/${s.id}/prompt`, { prompt: [{ type: 'text', text: '/stream 20' }] });
    await completed(1);
    assert.equal((await rec(i)).opens, 1);

    // No shutdown: the daemon forgets everything it held in memory.
    await daemon.restart();
    await daemon.api('POST', `/session/${s.id}/prompt`, { prompt: [{ type: 'text', text: '/stream 20' }] });
    await completed(2);
    const r = await rec(i);
    assert.notEqual(r.readyState, 2, `EventSource gave up after the restart (its reconnect was refused): ${r.errors} errors, ${r.opens} opens`);
    assert.ok(r.opens >= 2, `reconnected to the restarted daemon: ${r.opens} opens`);
    assert.ok(r.frames.some((f) => f.conn >= 2 && f.event === 'turn.completed'), 'the second turn came over the reconnected stream');

    // The page holds the session's log exactly: every stored event, once,
    // in order (read the log, then the page, until the page has its end).
    let stored;
    let got;
    const deadline = Date.now() + 15_000;
    for (;;) {
      stored = await daemon.events(s.id);
      got = (await rec(i)).frames.filter((f) => f.id);
      if (got.at(-1)?.id === stored.at(-1).id || Date.now() > deadline) break;
      await new Promise((ok) => setTimeout(ok, 100));
    }
    const unknown = stored.filter((e) => !ALL_TYPES.includes(e.type)).map((e) => e.type);
    assert.deepEqual(unknown, [], 'every stored type is one the page listens for');
    assert.deepEqual(got.map((f) => f.id), stored.map((e) => e.id), 'the page received the stored log, each event once');
    await page.evaluate((n) => window.streams[n].es.close(), i);
  });

  test('the same page without a ticket gets an error, not a stream', { timeout: 60_000 }, async () => {
    const s = await newSession();
    const i = await page.evaluate((url) => window.watch(url), `${daemon.base}/session/${s.id}/events`);
    // A 401 fails the connection for good: readyState CLOSED (2).
    await page.waitForFunction((n) => window.rec(n).readyState === 2, i, T);
    const r = await rec(i);
    assert.equal(r.opens, 0);
    assert.ok(r.errors >= 1);
    assert.deepEqual(r.frames, []);
  });

  test('no console errors from the page but the refused stream', () => {
    const bad = appProblems(browser.problems).filter((p) => !/EventSource|401/.test(p.text));
    assert.deepEqual(bad, []);
  });
});
