import { useEffect, useState } from 'preact/hooks';
import type { Store } from '../state/store';

/** Subscribes a component to a store; re-renders on every change. */
export function useStore<S>(store: Pick<Store<S, unknown>, 'getState' | 'subscribe'>): S {
  const [, force] = useState(0);
  useEffect(() => {
    const un = store.subscribe(() => force((n) => n + 1));
    force((n) => n + 1); // catch changes between render and subscribe
    return un;
  }, [store]);
  return store.getState();
}
