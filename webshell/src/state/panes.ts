// The chat panes: a main pane and additional panes side by side. Each pane
// owns one SessionController for the session it shows; showing another
// session disposes the old controller first, so nothing of the old session
// (a late response, an event, a continuation outcome) can reach the pane.
import { createStore, type Store } from './store';
import type { SessionController } from './session-controller';

export interface Pane {
  id: string;
  sessionId: string;
  controller: SessionController;
}

export interface PanesState {
  panes: Pane[];
  activeId?: string;
}

type Factory = (sessionId: string) => SessionController;

let paneSeq = 0;

export class PaneManager {
  readonly store: Store<PanesState, PanesState> = createStore((_s, n: PanesState) => n, { panes: [] } as PanesState);
  #factory: Factory;
  #onChange: ((sessionIds: string[]) => void) | undefined;

  constructor(factory: Factory, onChange?: (sessionIds: string[]) => void) {
    this.#factory = factory;
    this.#onChange = onChange;
  }

  get state(): PanesState {
    return this.store.getState();
  }

  #set(next: PanesState): void {
    this.store.dispatch(next);
    this.#onChange?.(next.panes.map((p) => p.sessionId));
  }

  #make(sessionId: string): Pane {
    const controller = this.#factory(sessionId);
    controller.start();
    return { id: `pane-${++paneSeq}`, sessionId, controller };
  }

  /** Shows sessionId in the active pane (or the first, or a new one). */
  show(sessionId: string, paneId = this.state.activeId): Pane {
    const panes = [...this.state.panes];
    let idx = panes.findIndex((p) => p.id === paneId);
    if (idx < 0) idx = 0;
    const cur = panes[idx];
    if (cur && cur.sessionId === sessionId) {
      this.#set({ ...this.state, activeId: cur.id });
      return cur;
    }
    // If another pane already shows it, focus that one instead.
    const other = panes.find((p) => p.sessionId === sessionId);
    if (other) {
      this.#set({ ...this.state, activeId: other.id });
      return other;
    }
    cur?.controller.dispose();
    const pane = this.#make(sessionId);
    if (cur) panes[idx] = pane;
    else panes.push(pane);
    this.#set({ panes, activeId: pane.id });
    return pane;
  }

  /** Opens sessionId in a new pane beside the others. */
  openBeside(sessionId: string): Pane {
    const existing = this.state.panes.find((p) => p.sessionId === sessionId);
    if (existing) {
      this.#set({ ...this.state, activeId: existing.id });
      return existing;
    }
    const pane = this.#make(sessionId);
    this.#set({ panes: [...this.state.panes, pane], activeId: pane.id });
    return pane;
  }

  close(paneId: string): void {
    const pane = this.state.panes.find((p) => p.id === paneId);
    if (!pane) return;
    pane.controller.dispose();
    const panes = this.state.panes.filter((p) => p.id !== paneId);
    const activeId = this.state.activeId === paneId ? panes[panes.length - 1]?.id : this.state.activeId;
    this.#set({ panes, activeId });
  }

  focus(paneId: string): void {
    if (this.state.activeId !== paneId && this.state.panes.some((p) => p.id === paneId)) this.#set({ ...this.state, activeId: paneId });
  }

  disposeAll(): void {
    for (const p of this.state.panes) p.controller.dispose();
    this.#set({ panes: [] });
  }
}
