// The top of a pane's timeline when only the latest page of turns is
// loaded: "Show earlier turns" reads the page before, busy while it is
// read, its failure said with a way to try again, and the start of the
// session marked once it is reached. (Scrolling, and where the reader's
// view stays, need a browser: webshell/e2e/history.e2e.test.mjs.)
import { cleanup, fireEvent, screen } from '@testing-library/preact';
import { afterEach, describe, expect, it } from 'vitest';
import type { Transcript, Turn } from '../src/state/types';
import { deferred, FakeApi, flush, transcript } from './fixtures';
import { mountPane } from './mount-pane';

afterEach(cleanup);

const SID = 'h1';
const at = (n: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString();
const turn = (n: number): Turn => ({ promptId: `t${n}`, seq: n, kind: 'prompt', state: 'completed', createdAt: at(n), endedAt: at(n) });

/** Turns from..to with their user message ("/echo n") and reply ("n"). */
function page(from: number, to: number, next?: string): Transcript {
  const ns = Array.from({ length: to - from + 1 }, (_, i) => from + i);
  return transcript(SID, 100, {
    turns: ns.map(turn),
    messages: ns.flatMap((n) => [
      { id: 10 * n, promptId: `t${n}`, role: 'user' as const, text: `/echo ${n}`, createdAt: at(n) },
      { id: 10 * n + 1, promptId: `t${n}`, role: 'agent' as const, text: `reply ${n}`, createdAt: at(n) },
    ]),
    ...(next ? { nextPageToken: next } : {}),
  });
}

const replies = () => screen.queryAllByTestId('agent-message').map((e) => e.textContent?.trim());

describe('earlier turns', () => {
  it('are read a page at a time from the button at the top, in order, down to the start of the session', async () => {
    const api = new FakeApi(SID);
    const older = deferred<Transcript>();
    api.transcriptImpl = (o) => (o?.pageToken ? older.promise : Promise.resolve(page(3, 4, 'tok-3')));
    await mountPane(api);
    expect(replies()).toEqual(['reply 3', 'reply 4']);
    const button = screen.getByRole('button', { name: 'Show earlier turns' });
    fireEvent.click(button);
    await flush();
    expect(api.calls.filter((c) => c.name === 'transcript').at(-1)?.args).toEqual([{ limit: 50, pageToken: 'tok-3' }]);
    // Busy: the same button, which does nothing more while the page is read.
    const busy = screen.getByTestId('show-earlier-turns');
    expect(busy.getAttribute('aria-busy')).toBe('true');
    expect(busy.textContent).toContain('Loading earlier turns…');
    fireEvent.click(busy);
    await flush();
    expect(api.count('transcript')).toBe(2);
    older.resolve(page(1, 2));
    await flush();
    expect(replies()).toEqual(['reply 1', 'reply 2', 'reply 3', 'reply 4']);
    expect(screen.queryByTestId('show-earlier-turns')).toBeNull();
    expect(screen.getByTestId('session-start').textContent).toBe('Start of the session');
  });

  it('that could not be read say so, and Try again reads them', async () => {
    const api = new FakeApi(SID);
    let fail = true;
    api.transcriptImpl = (o) => (!o?.pageToken ? Promise.resolve(page(3, 4, 'tok-3')) : fail ? Promise.reject(new Error('HTTP 503')) : Promise.resolve(page(1, 2)));
    await mountPane(api);
    fireEvent.click(screen.getByRole('button', { name: 'Show earlier turns' }));
    await flush();
    expect(screen.getByRole('alert').textContent).toContain('Could not load earlier turns: HTTP 503');
    fail = false;
    fireEvent.click(screen.getByRole('button', { name: 'Try again' }));
    await flush();
    expect(screen.queryByTestId('earlier-turns-error')).toBeNull();
    expect(replies()).toEqual(['reply 1', 'reply 2', 'reply 3', 'reply 4']);
  });

  it('are not offered, nor the start marked, in a session whose whole transcript is loaded', async () => {
    const api = new FakeApi(SID);
    api.transcriptImpl = () => Promise.resolve(page(1, 2));
    await mountPane(api);
    expect(replies()).toEqual(['reply 1', 'reply 2']);
    expect(screen.queryByTestId('show-earlier-turns')).toBeNull();
    expect(screen.queryByTestId('session-start')).toBeNull();
  });
});
