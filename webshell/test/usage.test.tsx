// What the agent says it used: the reducer takes the session's usage from
// its load and each turn's from the transcript, and folds usage.updated
// (the session's replaced, the turn's set); the pane's gauge and cost say
// it in words and as a meter, and hide when the agent said nothing; a
// turn's usage line says what the turn used.
import { cleanup, render, screen } from '@testing-library/preact';
import { afterEach, describe, expect, it } from 'vitest';
import { TurnUsage, UsageGauge } from '../src/components/Usage';
import { LangContext, type Lang } from '../src/i18n';
import { money, percent, shortTokens } from '../src/lib/usage';
import type { Usage } from '../src/state/types';
import { ev, evAction, FakeApi, flush, fold, loaded, session } from './fixtures';
import { mountPane } from './mount-pane';

afterEach(cleanup);

const SID = 's1';
const at = '2026-01-01T00:00:00Z';
const win = (used: number, cost?: number): Usage => ({ contextUsed: used, contextSize: 200000, ...(cost !== undefined ? { cost: { amount: cost, currency: 'USD' } } : {}) });

describe('the reducer', () => {
  it("takes the session's usage from its load and each turn's from the transcript", () => {
    const s = loaded(SID, {
      session: { usage: win(2000, 0.02) },
      transcript: { turns: [{ promptId: 'p1', kind: 'prompt', state: 'completed', createdAt: at, usage: win(2000) }] },
    });
    expect(s.usage).toEqual(win(2000, 0.02));
    expect(s.turns.p1!.usage).toEqual(win(2000));
  });

  it("folds usage.updated: the session's usage is replaced, the turn's set", () => {
    let s = loaded(SID, { session: { usage: win(1000, 0.01) } });
    s = fold(s, evAction(s, ev(SID, 11, 'turn.started', { promptId: 'p1', kind: 'prompt' })));
    s = fold(s, evAction(s, ev(SID, 12, 'usage.updated', { promptId: 'p1', report: win(3000, 0.03), session: { ...win(3000, 0.03), inputTokens: 50 }, turn: win(3000) })));
    expect(s.usage).toEqual({ ...win(3000, 0.03), inputTokens: 50 });
    expect(s.turns.p1!.usage).toEqual(win(3000));
    // The turn's end keeps what it used.
    s = fold(s, evAction(s, ev(SID, 13, 'turn.completed', { promptId: 'p1', state: 'completed', stopReason: 'end_turn' })));
    expect(s.turns.p1).toMatchObject({ state: 'completed', usage: win(3000) });
    // A report after the end (late) still lands on the turn.
    s = fold(s, evAction(s, ev(SID, 14, 'usage.updated', { promptId: 'p1', report: win(4000), session: win(4000, 0.04), turn: win(4000) })));
    expect(s.turns.p1!.usage).toEqual(win(4000));
    expect(s.usage).toEqual(win(4000, 0.04));
  });

  it('a report seen again (replay), of another session or for an unknown turn changes no turn', () => {
    let s = loaded(SID);
    s = fold(s, evAction(s, ev(SID, 11, 'turn.started', { promptId: 'p1', kind: 'prompt' })));
    s = fold(s, evAction(s, ev(SID, 12, 'usage.updated', { promptId: 'p1', report: win(3000), session: win(3000, 0.03), turn: win(3000) })));
    const before = s;
    s = fold(s, evAction(s, ev(SID, 12, 'usage.updated', { promptId: 'p1', report: win(9000), session: win(9000, 0.09), turn: win(9000) })));
    expect(s).toBe(before);
    s = fold(s, evAction(s, ev('other', 13, 'usage.updated', { promptId: 'p1', report: win(9000), session: win(9000, 0.09), turn: win(9000) })));
    expect(s).toBe(before);
    s = fold(s, evAction(s, ev(SID, 14, 'usage.updated', { promptId: 'ghost', report: win(5000), session: win(5000, 0.05), turn: win(5000) })));
    expect(s.usage).toEqual(win(5000, 0.05));
    expect(s.turns.ghost).toBeUndefined();
    expect(s.turns.p1!.usage).toEqual(win(3000));
  });

  it("a report without a promptId updates the session's usage only", () => {
    let s = loaded(SID);
    s = fold(s, evAction(s, ev(SID, 11, 'usage.updated', { report: win(1000, 0.5), session: win(1000, 0.5) })));
    expect(s.usage).toEqual(win(1000, 0.5));
  });
});

describe('formatting', () => {
  it('says token counts short and percentages and money in the language', () => {
    expect([950, 1000, 1500, 3000, 99_950, 200_000, 1_234_567].map(shortTokens)).toEqual(['950', '1k', '1.5k', '3k', '100k', '200k', '1.2M']);
    expect(percent(0.015, 'en')).toBe('1.5%');
    expect(money({ amount: 0.01 * 3, currency: 'USD' }, 'en')).toBe('$0.03');
    expect(money({ amount: 0.0042, currency: 'USD' }, 'en')).toBe('$0.0042');
    expect(money({ amount: 12.3456, currency: 'EUR' }, 'en')).toBe('€12.35');
    // A code Intl does not know is shown as the agent said it.
    expect(money({ amount: 2, currency: 'not a code' }, 'en')).toBe('2 not a code');
  });
});

function gauge(usage: Usage | undefined, lang: Lang = 'en') {
  return render(
    <LangContext.Provider value={lang}>
      <UsageGauge usage={usage} />
    </LangContext.Provider>,
  );
}

describe('the gauge', () => {
  it('shows the context window as a meter, in words and as a percentage, and the cost', () => {
    gauge(win(3000, 0.03));
    const m = screen.getByRole('meter', { name: 'Context window' });
    expect(m.getAttribute('aria-valuenow')).toBe('3000');
    expect(m.getAttribute('aria-valuemin')).toBe('0');
    expect(m.getAttribute('aria-valuemax')).toBe('200000');
    expect(m.getAttribute('aria-valuetext')).toBe('3k of 200k tokens used (1.5%)');
    expect(m.getAttribute('title')).toBe('3,000 of 200,000 tokens used (1.5%)');
    expect(m.textContent).toContain('3k / 200k tokens · 1.5%');
    expect((m.querySelector('.usage__fill') as HTMLElement).style.width).toBe('1.50%');
    expect(m.getAttribute('data-level')).toBe('ok');
    expect(screen.getByTestId('usage-cost').textContent).toBe('Cost $0.03');
  });

  it('turns amber near the end of the window and red at it', () => {
    gauge(win(170_000));
    expect(screen.getByTestId('context-gauge').getAttribute('data-level')).toBe('high');
    cleanup();
    gauge(win(199_000));
    expect(screen.getByTestId('context-gauge').getAttribute('data-level')).toBe('full');
  });

  it('hides when the agent said nothing of its window or cost', () => {
    gauge(undefined);
    expect(screen.queryByTestId('usage')).toBeNull();
    cleanup();
    gauge({ inputTokens: 10, outputTokens: 5 });
    expect(screen.queryByTestId('usage')).toBeNull();
    cleanup();
    // Half a window (no size) is no window.
    gauge({ contextUsed: 3000 });
    expect(screen.queryByTestId('usage')).toBeNull();
  });

  it('shows the cost alone when the window is unknown, and the window alone without a cost', () => {
    gauge({ cost: { amount: 1.5, currency: 'USD' } });
    expect(screen.queryByRole('meter')).toBeNull();
    expect(screen.getByTestId('usage-cost').textContent).toContain('$1.50');
    cleanup();
    gauge(win(3000));
    expect(screen.getByRole('meter')).toBeTruthy();
    expect(screen.queryByTestId('usage-cost')).toBeNull();
  });

  it('speaks Chinese', () => {
    gauge(win(3000, 0.03), 'zh');
    const m = screen.getByRole('meter', { name: '上下文窗口' });
    expect(m.getAttribute('aria-valuetext')).toBe('已用 3k / 200k tokens（1.5%）');
    expect(screen.getByTestId('usage-cost').textContent).toContain('US$0.03');
  });
});

describe("a turn's usage line", () => {
  const line = (usage: Usage | undefined) => render(<TurnUsage usage={usage} />);

  it('says tokens in and out and the context window', () => {
    line({ inputTokens: 1200, outputTokens: 300, cachedReadTokens: 800, totalTokens: 1500, contextUsed: 3000, contextSize: 200000 });
    expect(screen.getByTestId('turn-usage').textContent).toBe('1.2k in · 300 out · 800 cached · context 3k / 200k');
  });

  it('says the total when in and out are not said, and nothing without usage', () => {
    line({ totalTokens: 4200 });
    expect(screen.getByTestId('turn-usage').textContent).toBe('4.2k tokens');
    cleanup();
    line(undefined);
    expect(screen.queryByTestId('turn-usage')).toBeNull();
    line({ cost: { amount: 1, currency: 'USD' } });
    expect(screen.queryByTestId('turn-usage')).toBeNull();
  });
});

describe('in the pane', () => {
  class UsageApi extends FakeApi {
    override get() {
      return Promise.resolve(session(this.id, { usage: win(1000, 0.01) }));
    }
  }

  it('the gauge starts from the session, follows usage.updated, and each ended turn says its usage', async () => {
    const api = new UsageApi(SID, {
      transcript: { turns: [{ promptId: 'p0', kind: 'prompt', state: 'completed', createdAt: at, endedAt: at, usage: win(1000) }] },
    });
    await mountPane(api);
    expect(screen.getByRole('meter').getAttribute('aria-valuetext')).toBe('1k of 200k tokens used (0.5%)');
    expect(screen.getByTestId('usage-cost').textContent).toContain('$0.01');
    expect(screen.getByTestId('turn-usage').textContent).toBe('context 1k / 200k');
    api.stream.push(
      ev(SID, 11, 'turn.started', { promptId: 'p1', kind: 'prompt' }),
      ev(SID, 12, 'usage.updated', { promptId: 'p1', report: win(3000, 0.03), session: win(3000, 0.03), turn: win(3000) }),
      ev(SID, 13, 'turn.completed', { promptId: 'p1', state: 'completed', stopReason: 'end_turn' }),
    );
    await flush(10);
    expect(screen.getByRole('meter').getAttribute('aria-valuetext')).toBe('3k of 200k tokens used (1.5%)');
    expect(screen.getByTestId('usage-cost').textContent).toContain('$0.03');
    const lines = screen.getAllByTestId('turn-usage').map((e) => e.textContent);
    expect(lines).toEqual(['context 1k / 200k', 'context 3k / 200k']);
  });

  it('shows no gauge for a session without usage', async () => {
    await mountPane(new FakeApi(SID));
    expect(screen.queryByRole('meter')).toBeNull();
    expect(screen.queryByTestId('usage')).toBeNull();
  });
});
