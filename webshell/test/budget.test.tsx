// Budgets in the pane: the Budget button and how much of the token and
// cost budget is used, as meters; the editor that PATCHes the session and
// shows the daemon's 400; a turn a budget stopped said as such in the
// transcript; a stalled turn's notice with its Cancel, gone with
// turn.stall_ended; the recovery banner's "Raise budget" while over.
import { cleanup, fireEvent, render, screen, waitFor } from '@testing-library/preact';
import { afterEach, describe, expect, it } from 'vitest';
import { BudgetEditor, BudgetGauge } from '../src/components/Budget';
import { RecoveryBanner } from '../src/components/RecoveryBanner';
import { LangContext, type Lang } from '../src/i18n';
import type { BannerModel } from '../src/state/banner';
import type { Budget, Usage } from '../src/state/types';
import { ev, FakeApi, flush, session } from './fixtures';
import { mountPane } from './mount-pane';

afterEach(cleanup);

const SID = 's1';
const at = '2026-01-01T00:00:00Z';

/** toggle null: a read-only session's gauge (no editor to open). */
function gauge(budget: Budget | undefined, usage: Usage | undefined, lang: Lang = 'en', toggle: (() => void) | null = () => {}) {
  return render(
    <LangContext.Provider value={lang}>
      <BudgetGauge budget={budget} usage={usage} open={false} onToggle={toggle ?? undefined} editorId="b1" />
    </LangContext.Provider>,
  );
}

describe('the budget gauge', () => {
  it('without a budget: only the button that opens the editor', () => {
    gauge(undefined, { totalTokens: 500 });
    const b = screen.getByRole('button', { name: 'Budget' });
    expect(b.getAttribute('aria-expanded')).toBe('false');
    expect(screen.queryByRole('meter')).toBeNull();
    cleanup();
    // Read-only and no budget: nothing at all.
    gauge(undefined, undefined, 'en', null);
    expect(screen.queryByTestId('budget')).toBeNull();
  });

  it('says how much of the token and cost budget is used, as meters', () => {
    gauge({ maxTokens: 1000, maxCost: { amount: 1, currency: 'USD' } }, { totalTokens: 850, cost: { amount: 0.09, currency: 'USD' } });
    const tok = screen.getByRole('meter', { name: 'Token budget' });
    expect(tok.getAttribute('aria-valuenow')).toBe('850');
    expect(tok.getAttribute('aria-valuemax')).toBe('1000');
    expect(tok.getAttribute('aria-valuetext')).toBe('850 of 1,000 tokens used (85%)');
    expect(tok.textContent).toBe('850 / 1k tokens');
    expect(tok.getAttribute('data-level')).toBe('high');
    const cost = screen.getByRole('meter', { name: 'Cost budget' });
    expect(cost.getAttribute('aria-valuetext')).toBe('$0.09 of $1.00 spent (9%)');
    expect(cost.textContent).toBe('$0.09 / $1.00');
    expect(cost.getAttribute('data-level')).toBe('ok');
  });

  it('past the budget: red, the bar full, the value kept in range and the text saying how far', () => {
    gauge({ maxTokens: 1000 }, { totalTokens: 1080 });
    const tok = screen.getByRole('meter', { name: 'Token budget' });
    expect(tok.getAttribute('data-level')).toBe('full');
    expect(tok.getAttribute('aria-valuenow')).toBe('1000');
    expect(tok.getAttribute('aria-valuetext')).toBe('1,080 of 1,000 tokens used (108%)');
    expect((tok.querySelector('.budget__fill') as HTMLElement).style.width).toBe('100.00%');
  });

  it('speaks Chinese', () => {
    gauge({ maxTokens: 1000 }, { totalTokens: 500 }, 'zh');
    screen.getByRole('button', { name: '预算' });
    expect(screen.getByRole('meter', { name: 'Token 预算' }).getAttribute('aria-valuetext')).toBe('已用 500 / 1,000 tokens（50%）');
  });
});

describe('the budget editor', () => {
  function editor(budget: Budget | undefined, save: (b: Budget) => Promise<string | undefined>, lang: Lang = 'en') {
    const calls = { saved: [] as Budget[], closed: 0 };
    render(
      <LangContext.Provider value={lang}>
        <BudgetEditor id="b1" budget={budget} onSave={(b) => (calls.saved.push(b), save(b))} onClose={() => calls.closed++} />
      </LangContext.Provider>,
    );
    return calls;
  }
  const field = (name: string) => screen.getByLabelText(name) as HTMLInputElement;

  it('shows the budget, saves it whole and closes', async () => {
    const calls = editor({ maxTokens: 1000, maxTurnSeconds: 600 }, async () => undefined);
    screen.getByRole('form', { name: 'Budget of this session' });
    expect(field('Max tokens').value).toBe('1000');
    expect(document.activeElement).toBe(field('Max tokens'));
    expect(field('Max cost (USD)').value).toBe('');
    expect(field('Max cost (USD)').placeholder).toBe('No limit');
    expect(field('Max time per turn').value).toBe('10');
    expect((screen.getByLabelText('Unit of the time per turn') as HTMLSelectElement).value).toBe('minutes');
    fireEvent.input(field('Max tokens'), { target: { value: '5000' } });
    fireEvent.input(field('Max cost (USD)'), { target: { value: '2' } });
    fireEvent.change(screen.getByLabelText('Unit of the time per turn'), { target: { value: 'seconds' } });
    fireEvent.input(field('Report silence after (seconds)'), { target: { value: '30' } });
    fireEvent.click(screen.getByRole('button', { name: 'Save budget' }));
    await waitFor(() => expect(calls.closed).toBe(1));
    expect(calls.saved).toEqual([{ maxTokens: 5000, maxCost: { amount: 2, currency: 'USD' }, maxTurnSeconds: 10, stallSeconds: 30 }]);
  });

  it("shows the daemon's refusal and stays open; Remove all limits saves an empty budget", async () => {
    let answer: string | undefined = "a budget's limits cannot be negative";
    const calls = editor({ maxTokens: 1000 }, async () => answer);
    fireEvent.input(field('Max tokens'), { target: { value: '-5' } });
    fireEvent.click(screen.getByRole('button', { name: 'Save budget' }));
    await waitFor(() => expect(screen.getByRole('alert').textContent).toBe("Could not save the budget: a budget's limits cannot be negative"));
    expect(calls.closed).toBe(0);
    answer = undefined;
    fireEvent.click(screen.getByRole('button', { name: 'Remove all limits' }));
    await waitFor(() => expect(calls.closed).toBe(1));
    expect(calls.saved.at(-1)).toEqual({});
  });

  it('closes with Esc, and speaks Chinese', () => {
    const calls = editor(undefined, async () => undefined, 'zh');
    screen.getByRole('form', { name: '此会话的预算' });
    screen.getByLabelText('最高费用（USD）');
    fireEvent.keyDown(field('最多 tokens'), { key: 'Escape' });
    expect(calls.closed).toBe(1);
  });
});

describe('in the pane', () => {
  it('the Budget button opens the editor; saving PATCHes the session and the gauge follows', async () => {
    const api = new FakeApi(SID);
    api.sessionImpl = () => Promise.resolve(session(SID, { budget: { maxTokens: 1000 }, usage: { totalTokens: 1080 } }));
    await mountPane(api);
    expect(screen.getByRole('meter', { name: 'Token budget' }).getAttribute('data-level')).toBe('full');
    fireEvent.click(screen.getByRole('button', { name: 'Budget' }));
    await flush();
    expect(screen.getByRole('button', { name: 'Budget' }).getAttribute('aria-expanded')).toBe('true');
    fireEvent.input(screen.getByLabelText('Max tokens'), { target: { value: '100000' } });
    fireEvent.click(screen.getByRole('button', { name: 'Save budget' }));
    await waitFor(() => expect(screen.queryByTestId('budget-editor')).toBeNull());
    expect(api.calls.find((c) => c.name === 'update')?.args[0]).toEqual({ budget: { maxTokens: 100000 } });
    expect(screen.getByRole('meter', { name: 'Token budget' }).getAttribute('aria-valuetext')).toBe('1,080 of 100,000 tokens used (1.1%)');
  });

  it('a turn a budget stopped reads "Stopped: budget reached", not as a failure', async () => {
    const api = new FakeApi(SID, {
      transcript: { turns: [{ promptId: 'p1', kind: 'prompt', state: 'cancelled', createdAt: at, endedAt: at, error: { code: 'budget_exceeded', message: 'the session used 1080 tokens of its budget of 1000' } }] },
    });
    await mountPane(api);
    const end = screen.getByTestId('turn-end');
    expect(end.textContent).toBe('Stopped: budget reached — the session used 1080 tokens of its budget of 1000');
    expect(end.dataset.stoppedBy).toBe('budget');
    expect(end.className).toContain('turn-end--budget');
    // Live, from the turn's end.
    api.stream.push(
      ev(SID, 11, 'turn.started', { promptId: 'p2', kind: 'prompt' }),
      ev(SID, 12, 'turn.cancelled', { promptId: 'p2', state: 'cancelled', reason: 'budget_exceeded', message: 'the turn ran for 1m0s, past its budget of 1m0s' }),
    );
    await flush(10);
    expect(screen.getAllByTestId('turn-end').map((e) => e.textContent)).toEqual([
      'Stopped: budget reached — the session used 1080 tokens of its budget of 1000',
      'Stopped: budget reached — the turn ran for 1m0s, past its budget of 1m0s',
    ]);
  });

  it("a stalled turn's notice says how long the agent is silent, cancels, and goes with turn.stall_ended", async () => {
    const api = new FakeApi(SID);
    await mountPane(api);
    const since = new Date(Date.now() - 12_000).toISOString();
    api.stream.push(
      ev(SID, 11, 'turn.started', { promptId: 'p1', kind: 'prompt' }),
      ev(SID, 12, 'turn.stalled', { promptId: 'p1', since, seconds: 10, stalledAt: new Date(Date.parse(since) + 10_000).toISOString() }),
    );
    await flush(10);
    const notice = screen.getByTestId('stall-notice');
    expect(screen.getByTestId('stall-silent').textContent).toMatch(/^No output from the agent for 1\d sec$/);
    // A screen reader hears the stall as it began, not a count every second.
    expect(notice.querySelector('.sr-only')!.textContent).toBe('No output from the agent for 10 sec');
    // A prompt queued behind it does not hide it.
    api.stream.push(ev(SID, 13, 'turn.queued', { promptId: 'p2', kind: 'prompt' }));
    await flush(10);
    expect(screen.getByTestId('stall-notice').dataset.promptId).toBe('p1');
    fireEvent.click(screen.getByRole('button', { name: 'Cancel turn' }));
    await flush();
    // As the pane's Stop: the queued prompt stays.
    expect(api.calls.filter((c) => c.name === 'cancel').map((c) => c.args)).toEqual([[{ keepQueue: true }]]);
    api.stream.push(ev(SID, 14, 'turn.stall_ended', { promptId: 'p1' }));
    await flush(10);
    expect(screen.queryByTestId('stall-notice')).toBeNull();
    // Stalled again, then the turn ends: gone with it.
    api.stream.push(ev(SID, 15, 'turn.stalled', { promptId: 'p1', since, seconds: 10, stalledAt: at }));
    await flush(10);
    expect(screen.getByTestId('stall-notice')).toBeTruthy();
    api.stream.push(ev(SID, 16, 'turn.cancelled', { promptId: 'p1', state: 'cancelled' }));
    await flush(10);
    expect(screen.queryByTestId('stall-notice')).toBeNull();
  });
});

describe('the recovery banner while over budget', () => {
  const model = (over: Partial<BannerModel>): BannerModel => ({ visible: true, kind: 'interrupted_turn', showContinue: false, toolCalls: [], interruptReason: 'budget_exceeded', ...over });

  it('says a budget stopped the turn and offers Raise budget until it can continue', () => {
    let raised = 0;
    const { rerender } = render(<RecoveryBanner model={model({ cannotReason: 'budget_exceeded' })} onContinue={() => {}} onRaiseBudget={() => raised++} />);
    const banner = screen.getByTestId('recovery-banner');
    expect(banner.textContent).toContain('A budget stopped the agent while it worked on your last message.');
    expect(banner.textContent).toContain('Raise the budget to continue.');
    expect(banner.textContent).not.toContain('Cause:');
    fireEvent.click(screen.getByRole('button', { name: 'Raise budget' }));
    expect(raised).toBe(1);
    expect(screen.queryByTestId('continue')).toBeNull();
    rerender(<RecoveryBanner model={model({ showContinue: true })} onContinue={() => {}} onRaiseBudget={() => raised++} />);
    expect(screen.queryByRole('button', { name: 'Raise budget' })).toBeNull();
    screen.getByTestId('continue');
  });
});
