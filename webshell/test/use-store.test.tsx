// useStore renders a burst of store changes once, not once per change: a
// reply streamed in thousands of chunks arrives one event per microtask.
import { cleanup, render, screen } from '@testing-library/preact';
import { afterEach, describe, expect, it } from 'vitest';
import { useStore } from '../src/lib/use-store';
import { createStore } from '../src/state/store';
import { flush } from './fixtures';

afterEach(cleanup);

describe('useStore', () => {
  it('coalesces changes made a microtask apart into one render, and shows the last state', async () => {
    const store = createStore((n: number, by: number) => n + by, 0);
    let renders = 0;
    function Counter() {
      renders++;
      return <span data-testid="n">{useStore(store)}</span>;
    }
    render(<Counter />);
    await flush();
    const before = renders;
    for (let i = 0; i < 50; i++) {
      store.dispatch(1);
      await Promise.resolve(); // as the event stream's loop yields between events
    }
    await flush();
    expect(screen.getByTestId('n').textContent).toBe('50');
    expect(renders - before).toBeLessThanOrEqual(2);
  });
});
