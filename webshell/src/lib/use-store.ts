import { useEffect, useState } from 'preact/hooks';
import type { Store } from '../state/store';

/**
 * When a store's change is rendered: at the next animation frame, so that a
 * burst of changes (a reply streamed in thousands of chunks, the replay
 * after a reconnect) renders once a frame instead of once a change. Each
 * render of a streaming message parses its whole Markdown again, so one
 * render per chunk costs the square of the reply's length and freezes the
 * page on long replies. Without frames (no window): a macrotask.
 */
const nextFrame: (cb: () => void) => unknown =
  typeof requestAnimationFrame === 'function' ? (cb) => requestAnimationFrame(cb) : (cb) => setTimeout(cb, 0);

/** Subscribes a component to a store; re-renders after changes, at most once a frame. */
export function useStore<S>(store: Pick<Store<S, unknown>, 'getState' | 'subscribe'>): S {
  const [, force] = useState(0);
  useEffect(() => {
    let pending = false;
    let live = true;
    const un = store.subscribe(() => {
      if (pending) return;
      pending = true;
      nextFrame(() => {
        pending = false;
        if (live) force((n) => n + 1);
      });
    });
    force((n) => n + 1); // catch changes between render and subscribe
    return () => {
      live = false;
      un();
    };
  }, [store]);
  return store.getState();
}
