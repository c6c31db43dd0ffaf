// TetherClient / SessionClient against a scripted fetch: auth header,
// problem mapping, timeouts, network errors, abort, continue outcomes.
import { describe, expect, it } from 'vitest';
import {
  isTetherProblem,
  TetherClient,
  TetherNetworkError,
  TetherProblem,
  TetherTimeoutError,
} from '../src/index.js';

type Answer = (req: Request) => Response | Promise<Response> | Error;

function client(answer: Answer, opts: { timeoutMs?: number } = {}) {
  const seen: Request[] = [];
  const fetchImpl = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const req = input instanceof Request ? input : new Request(input, init);
    seen.push(req);
    const out = await answer(req);
    if (out instanceof Error) throw out;
    return out;
  }) as typeof fetch;
  const c = new TetherClient({ baseUrl: 'http://tether.test/', token: 'sekret', fetch: fetchImpl, ...opts });
  return { c, seen };
}

const json = (status: number, body: unknown, type = 'application/json') =>
  new Response(JSON.stringify(body), { status, headers: { 'Content-Type': type } });

const hang = (req: Request) =>
  new Promise<Response>((_ok, fail) => {
    req.signal.addEventListener('abort', () => fail(req.signal.reason ?? new DOMException('aborted', 'AbortError')));
  });

describe('TetherClient', () => {
  it('sends the bearer token (not to /health) and strips the trailing slash of baseUrl', async () => {
    const { c, seen } = client((req) =>
      req.url.endsWith('/health') ? json(200, { status: 'ok', version: '1' }) : json(200, { tasks: [] }),
    );
    expect(await c.health()).toEqual({ status: 'ok', version: '1' });
    expect(await c.listTasks()).toEqual({ tasks: [] });
    expect(seen[0]!.url).toBe('http://tether.test/health');
    expect(seen[0]!.headers.get('Authorization')).toBeNull();
    expect(seen[1]!.url).toBe('http://tether.test/tasks');
    expect(seen[1]!.headers.get('Authorization')).toBe('Bearer sekret');
  });

  it('serializes listSessions state as a comma list (the contract says explode: false)', async () => {
    const { c, seen } = client(() => json(200, { sessions: [] }));
    await c.listSessions({ state: ['RUNNING', 'WAITING_FOR_INPUT'], limit: 5 });
    const u = new URL(seen[0]!.url);
    expect(u.searchParams.get('state')).toBe('RUNNING,WAITING_FOR_INPUT');
    expect(u.searchParams.get('limit')).toBe('5');
  });

  it('listExecutors() reads GET /executors', async () => {
    const hosts = [{ name: 'gpu-box', runtime: 'remote', state: 'lost', sessions: [] }];
    const { c, seen } = client(() => json(200, { hosts }));
    expect(await c.listExecutors()).toEqual({ hosts });
    expect(seen[0]!.method).toBe('GET');
    expect(seen[0]!.url).toBe('http://tether.test/executors');
  });

  it('throws TetherProblem with status, code, detail and body for problem+json', async () => {
    const { c } = client(() =>
      json(404, { type: 'about:blank', title: 'Not Found', status: 404, code: 'session_not_found', detail: 'nope', id: 'x' }, 'application/problem+json'),
    );
    const e = await c.getSession('x').catch((err: unknown) => err);
    expect(e).toBeInstanceOf(TetherProblem);
    expect(e).toBeInstanceOf(Error);
    const p = e as TetherProblem;
    expect([p.status, p.code, p.detail, p.body.id]).toEqual([404, 'session_not_found', 'nope', 'x']);
    expect(isTetherProblem(p, 'session_not_found')).toBe(true);
    expect(isTetherProblem(p, ['unauthorized'])).toBe(false);
  });

  it('maps a non-problem error body to code http_<status>', async () => {
    const { c } = client(() => new Response('<html>bad gateway</html>', { status: 502, headers: { 'Content-Type': 'text/html' } }));
    const p = (await c.listAgents().catch((e: unknown) => e)) as TetherProblem;
    expect(p).toBeInstanceOf(TetherProblem);
    expect(p.code).toBe('http_502');
    expect(p.detail).toContain('bad gateway');
  });

  it('times out with TetherTimeoutError (client default and per call)', async () => {
    const { c } = client(hang, { timeoutMs: 50 });
    await expect(c.listTasks()).rejects.toBeInstanceOf(TetherTimeoutError);
    const e = (await c.listTasks({ timeoutMs: 20 }).catch((x: unknown) => x)) as TetherTimeoutError;
    expect(e.timeoutMs).toBe(20);
  });

  it('network failures become TetherNetworkError with the cause', async () => {
    const cause = new TypeError('fetch failed');
    const { c } = client(() => cause);
    const e = (await c.listTasks().catch((x: unknown) => x)) as TetherNetworkError;
    expect(e).toBeInstanceOf(TetherNetworkError);
    expect(e.cause).toBe(cause);
    expect(e).not.toBeInstanceOf(TetherTimeoutError);
  });

  it("a caller's abort rejects with the signal's reason, not a timeout", async () => {
    const { c } = client(hang, { timeoutMs: 5000 });
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 20);
    const e = await c.listTasks({ signal: ac.signal }).catch((x: unknown) => x);
    expect((e as Error).name).toBe('AbortError');
    await expect(c.listTasks({ signal: AbortSignal.abort() })).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('prompt() turns a string into one text block and passes promptId/multitask', async () => {
    const { c, seen } = client(() => json(202, { promptId: 'p1', state: 'running', eventEpoch: 'E', cursor: 'E:3' }));
    const acc = await c.session('s 1').prompt('hello', { promptId: 'p1', multitask: 'reject' });
    expect(acc.cursor).toBe('E:3');
    expect(seen[0]!.url).toBe('http://tether.test/session/s%201/prompt');
    expect(await seen[0]!.json()).toEqual({ prompt: [{ type: 'text', text: 'hello' }], promptId: 'p1', multitask: 'reject' });
  });

  it('cancel() drops the queue by default and keeps it with keepQueue', async () => {
    const { c, seen } = client(() => json(200, { cancelled: true, promptId: 'p1' }));
    await c.session('s1').cancel();
    await c.session('s1').cancel({ keepQueue: true });
    expect(seen.map((r) => [r.method, r.url])).toEqual([
      ['POST', 'http://tether.test/session/s1/cancel'],
      ['POST', 'http://tether.test/session/s1/cancel?keepQueue=true'],
    ]);
  });
});

describe('TetherClient.openEventSource', () => {
  it('gets a ticket with the token, then opens the ticket url with no token in it', async () => {
    const { c, seen } = client(() =>
      json(201, { ticket: 'tk1', url: '/session/s1/events?ticket=tk1&types=message.added', expiresAt: '2030-01-01T00:00:00Z' }),
    );
    const opened: string[] = [];
    class FakeEventSource {
      constructor(readonly url: string) {
        opened.push(url);
      }
    }
    await c.openEventSource(
      { sessionId: 's1', types: ['message.added'], cursor: 'e:3' },
      { EventSource: FakeEventSource as unknown as typeof EventSource },
    );
    expect(seen).toHaveLength(1);
    expect(seen[0]!.method).toBe('POST');
    expect(new URL(seen[0]!.url).pathname).toBe('/events/tickets');
    expect(seen[0]!.headers.get('authorization')).toBe('Bearer sekret');
    expect(await seen[0]!.json()).toEqual({ sessionId: 's1', types: 'message.added', cursor: 'e:3' });
    expect(opened).toEqual(['http://tether.test/session/s1/events?ticket=tk1&types=message.added']);
    expect(opened[0]).not.toContain('sekret');
  });

  it('a refused ticket request throws the problem and opens nothing', async () => {
    const { c } = client(() =>
      json(429, { type: 'about:blank', title: 'Too Many Requests', status: 429, code: 'too_many_stream_tickets' }, 'application/problem+json'),
    );
    let opened = 0;
    const Fake = function () {
      opened++;
    } as unknown as typeof EventSource;
    await expect(c.openEventSource({}, { EventSource: Fake })).rejects.toMatchObject({ status: 429, code: 'too_many_stream_tickets' });
    expect(opened).toBe(0);
  });
});

describe('SessionClient.continue', () => {
  const recovery = { kind: 'interrupted_turn', canContinue: true, danglingToolCalls: [], notice: 'n', promptId: 'p0' };

  it('accepted: returns the envelope', async () => {
    const { c, seen } = client(() =>
      json(202, { accepted: true, promptId: 'c1', state: 'running', interruption: recovery, eventEpoch: 'E', cursor: 'E:9' }),
    );
    const out = await c.session('s').continue({ promptId: 'c1' });
    expect(out).toEqual({ kind: 'accepted', promptId: 'c1', state: 'running', interruption: recovery, eventEpoch: 'E', cursor: 'E:9' });
    expect(await seen[0]!.json()).toEqual({ promptId: 'c1' });
  });

  it('accepted from an older daemon without eventEpoch/cursor', async () => {
    const { c } = client(() => json(202, { accepted: true, promptId: 'c1', interruption: recovery }));
    const out = await c.session('s').continue();
    expect(out.kind).toBe('accepted');
    if (out.kind === 'accepted') {
      expect(out.eventEpoch).toBeUndefined();
      expect(out.cursor).toBeUndefined();
    }
  });

  it('sends no body without a promptId', async () => {
    const { c, seen } = client(() => json(202, { accepted: true, promptId: 'gen', interruption: recovery }));
    await c.session('s').continue();
    expect(await seen[0]!.text()).toBe('');
  });

  it('declined (409): reason, recovery and the problem', async () => {
    const body = { type: 'about:blank', title: 'Conflict', status: 409, code: 'turn_active', accepted: false, reason: 'turn_active', recovery: { ...recovery, canContinue: false, reason: 'turn_active' } };
    const { c } = client(() => json(409, body, 'application/problem+json'));
    const out = await c.session('s').continue();
    expect(out.kind).toBe('declined');
    if (out.kind === 'declined') {
      expect(out.reason).toBe('turn_active');
      expect(out.recovery?.reason).toBe('turn_active');
      expect(out.problem).toBeInstanceOf(TetherProblem);
      expect(out.problem.status).toBe(409);
    }
  });

  it('unknown on network error / timeout / 5xx, never retried; retrySafe iff promptId', async () => {
    let calls = 0;
    const { c } = client(() => {
      calls++;
      return new TypeError('connection reset');
    });
    const a = await c.session('s').continue();
    expect(a).toMatchObject({ kind: 'unknown', retrySafe: false });
    const b = await c.session('s').continue({ promptId: 'c9' });
    expect(b).toMatchObject({ kind: 'unknown', retrySafe: true });
    if (b.kind === 'unknown') expect(b.error).toBeInstanceOf(TetherNetworkError);
    expect(calls).toBe(2); // one request per call

    const t = client(hang, { timeoutMs: 30 });
    const tOut = await t.c.session('s').continue({ promptId: 'c9' });
    expect(tOut.kind).toBe('unknown');
    if (tOut.kind === 'unknown') expect(tOut.error).toBeInstanceOf(TetherTimeoutError);

    const f = client(() => json(502, { type: 'about:blank', title: 'Bad Gateway', status: 502, code: 'resume_failed' }, 'application/problem+json'));
    const fOut = await f.c.session('s').continue();
    expect(fOut).toMatchObject({ kind: 'unknown', retrySafe: false });
    expect(f.seen).toHaveLength(1);
  });

  it('throws TetherProblem for a definite 4xx (unknown session)', async () => {
    const { c } = client(() => json(404, { type: 'about:blank', title: 'Not Found', status: 404, code: 'session_not_found' }, 'application/problem+json'));
    await expect(c.session('nope').continue()).rejects.toMatchObject({ status: 404, code: 'session_not_found' });
  });
});
