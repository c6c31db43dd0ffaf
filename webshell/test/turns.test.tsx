// How turns read in a pane: the plan open while its turn works and gone
// once it is done, "End session" asking first, and states said as a
// person says them.
import { cleanup, fireEvent, render, screen, within } from '@testing-library/preact';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SessionStateBadge, TaskStateBadge } from '../src/components/Badges';
import { AgentsContext, ChatPane } from '../src/components/ChatPane';
import { PlanView } from '../src/components/Timeline';
import { LangContext } from '../src/i18n';
import { SessionController } from '../src/state/session-controller';
import type { PlanEntry } from '../src/state/types';
import { FakeApi, flush } from './fixtures';

afterEach(cleanup);

const entry = (content: string, status: PlanEntry['status']): PlanEntry => ({ content, status, priority: 'medium' });

describe('the plan', () => {
  const plan = (running: boolean, ...entries: PlanEntry[]) => {
    render(<PlanView plan={entries} running={running} />);
    return screen.queryByTestId('plan') as HTMLDetailsElement | null;
  };

  it('is open while its turn works on it', () => {
    expect(plan(true, entry('look', 'completed'), entry('write', 'in_progress'))?.open).toBe(true);
  });

  it('folds when the turn ends with steps left', () => {
    const p = plan(false, entry('look', 'completed'), entry('write', 'pending'));
    expect(p?.open).toBe(false);
    expect(p?.textContent).toContain('1/2');
  });

  it('is gone once every step is done and the turn has ended: no "Plan 2/2" pinned for the session', () => {
    expect(plan(false, entry('look', 'completed'), entry('write', 'completed'))).toBeNull();
  });
});

describe('End session', () => {
  async function mount(onEndSession: () => void) {
    const api = new FakeApi('S');
    const c = new SessionController(api);
    c.start();
    await flush();
    render(
      <LangContext.Provider value="en">
        <AgentsContext.Provider value={{}}>
          <ChatPane controller={c} shownSessionId="S" isMain active onFocus={() => {}} onStartNew={() => {}} onEndSession={onEndSession} />
        </AgentsContext.Provider>
      </LangContext.Provider>,
    );
    await flush();
  }

  it('asks first: Cancel (the focused answer) keeps the session, the dialog\'s "End session" ends it', async () => {
    const end = vi.fn();
    await mount(end);
    fireEvent.click(screen.getByTestId('end-session'));
    const dialog = screen.getByRole('alertdialog', { name: 'End this session?' });
    const cancel = within(dialog).getByRole('button', { name: 'Cancel' });
    expect(document.activeElement).toBe(cancel);
    fireEvent.click(cancel);
    expect(screen.queryByRole('alertdialog')).toBeNull();
    expect(end).not.toHaveBeenCalled();

    fireEvent.click(screen.getByTestId('end-session'));
    fireEvent.keyDown(screen.getByRole('alertdialog'), { key: 'Escape' });
    expect(screen.queryByRole('alertdialog')).toBeNull();
    expect(end).not.toHaveBeenCalled();

    fireEvent.click(screen.getByTestId('end-session'));
    fireEvent.click(within(screen.getByRole('alertdialog')).getByRole('button', { name: 'End session' }));
    expect(end).toHaveBeenCalledTimes(1);
    expect(screen.queryByRole('alertdialog')).toBeNull();
  });
});

describe('states, as a person says them', () => {
  const label = (el: preact.JSX.Element) => {
    const { container, unmount } = render(<LangContext.Provider value="en">{el}</LangContext.Provider>);
    const text = container.textContent;
    unmount();
    return text;
  };

  it('a task whose session waits (a brand-new one too) is waiting for you, not "Review"', () => {
    expect(label(<TaskStateBadge state="REVIEW" />)).toBe('Waiting for you');
    expect(label(<TaskStateBadge state="IN_PROGRESS" />)).toBe('Working');
    expect(label(<TaskStateBadge state="COMPLETED" />)).toBe('Done');
  });

  it('a session says what its agent does', () => {
    expect(label(<SessionStateBadge state="CREATED" />)).toBe('New');
    expect(label(<SessionStateBadge state="RUNNING" />)).toBe('Working');
    expect(label(<SessionStateBadge state="WAITING_FOR_INPUT" />)).toBe('Waiting for you');
    expect(label(<SessionStateBadge state="COMPLETED" />)).toBe('Ended');
  });
});
