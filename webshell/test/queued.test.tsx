// Prompts waiting in the queue (e.g. held since a restart): listed in the
// order they run with their text, each with a Withdraw button that sends one
// DELETE and disappears once the turn's turn.cancelled event arrives.
import { cleanup, fireEvent, screen } from '@testing-library/preact';
import { afterEach, describe, expect, it } from 'vitest';
import type { Transcript } from '../src/state/types';
import { ev, FakeApi, flush, interruptedTurn } from './fixtures';
import { mountPane } from './mount-pane';

afterEach(cleanup);

const SID = 's1';
const at = '2026-01-01T00:00:00Z';
const turn = (promptId: string, state: string, text: string) => ({ promptId, kind: 'prompt', state, createdAt: at, prompt: [{ type: 'text', text }] });

function held(): FakeApi {
  const turns = [turn('p1', 'interrupted', 'first'), turn('q1', 'queued', 'queued one'), turn('q2', 'queued', 'queued two')] as unknown as Transcript['turns'];
  return new FakeApi(SID, { recovery: { ...interruptedTurn('p1'), queuedPromptIds: ['q1', 'q2'], queueHeld: true }, transcript: { turns } });
}

const mount = mountPane;

const listed = () => screen.queryAllByRole('listitem').filter((li) => li.classList.contains('msg--queued')).map((li) => li.getAttribute('data-prompt-id'));

describe('queued prompts', () => {
  it('are listed in order with their text', async () => {
    await mount(held());
    expect(listed()).toEqual(['q1', 'q2']);
    expect(screen.getByText('queued one')).toBeTruthy();
    expect(screen.getByText('queued two')).toBeTruthy();
  });

  it('Withdraw sends one DELETE for that prompt and the turn leaves the list on turn.cancelled', async () => {
    const api = held();
    await mount(api);
    fireEvent.click(screen.getAllByRole('button', { name: 'Withdraw' })[0]!);
    await flush();
    expect(api.calls.filter((x) => x.name === 'withdraw').map((x) => x.args)).toEqual([['q1']]);
    api.stream.push(ev(SID, 11, 'turn.cancelled', { promptId: 'q1', state: 'cancelled', stopReason: 'withdrawn', reason: 'withdrawn' }));
    await flush();
    expect(listed()).toEqual(['q2']);
  });

  it('a prompt queued by a turn.queued event is listed with its text', async () => {
    const api = held();
    await mount(api);
    api.stream.push(ev(SID, 11, 'turn.queued', { promptId: 'q3', kind: 'prompt', seq: 4, prompt: [{ type: 'text', text: 'queued three' }] }));
    await flush();
    expect(listed()).toEqual(['q1', 'q2', 'q3']);
    expect(screen.getByText('queued three')).toBeTruthy();
  });
});

describe('Esc with prompts queued behind the running turn', () => {
  const running = () =>
    new FakeApi(SID, { transcript: { turns: [turn('p1', 'running', '/sleep 30000')] as unknown as Transcript['turns'] } });

  it('cancels the running turn only: the queued prompt stays, "Queued · Withdraw", until it is withdrawn', async () => {
    const api = running();
    const c = await mount(api);
    void c.sendPrompt('next question', 'q1');
    await flush();
    api.stream.push(ev(SID, 11, 'turn.queued', { promptId: 'q1', kind: 'prompt', prompt: [{ type: 'text', text: 'next question' }] }));
    await flush();
    const queued = () => screen.queryByTestId('queued');
    expect(queued()?.textContent).toBe('Queued · Withdraw');

    fireEvent.keyDown(screen.getByTestId('pane'), { key: 'Escape' });
    await flush();
    expect(api.calls.filter((x) => x.name === 'cancel').map((x) => x.args)).toEqual([[{ keepQueue: true }]]);
    api.stream.push(ev(SID, 12, 'turn.cancelled', { promptId: 'p1', state: 'cancelled', stopReason: 'cancelled', cancelRequested: true }));
    await flush();
    expect(screen.getByText('Turn cancelled')).toBeTruthy();
    expect(queued()?.closest<HTMLElement>('[data-prompt-id]')?.dataset.promptId).toBe('q1');
    // The cancel is over with the turn it was about; what is queued is not being cancelled.
    expect(screen.getByTestId('cancel').textContent).toBe(' Cancel');

    fireEvent.click(screen.getByRole('button', { name: 'Withdraw' }));
    await flush();
    expect(api.calls.filter((x) => x.name === 'withdraw').map((x) => x.args)).toEqual([['q1']]);
    api.stream.push(ev(SID, 13, 'turn.cancelled', { promptId: 'q1', state: 'cancelled', stopReason: 'withdrawn', reason: 'withdrawn' }));
    await flush();
    expect(queued()).toBeNull();
    expect(screen.queryByText('next question')).toBeNull();
    // The withdrawn prompt never ran: no second "Turn cancelled" for it.
    expect(screen.getAllByText('Turn cancelled')).toHaveLength(1);
  });
});
