// A transcript (the snapshot's latest page, or an older page) as the
// pane's view holds it: turns, messages, tool calls and the timeline
// ordered by time; and the merging of older pages into a view that has
// been following the live stream since its first page.
//
// The pane loads the latest page of turns only (a 10,000-turn session's
// whole transcript is megabytes) and older pages as the reader scrolls
// back. An older page only holds turns before every loaded one (the daemon
// pages by turn seq, and its token names the oldest turn of the page after
// it), so its items go in front; they are still deduplicated by id, so a
// page that overlaps what the stream delivered can never show twice.
//
// Only types are imported from session-state.ts (erased at build time):
// session-state.ts imports this module's functions, and no runtime cycle
// is made.
import { TERMINAL_TURN_STATES } from './selectors';
import type { MessageView, PromptAttachment, SessionViewState, TimelineItem, TurnView } from './session-state';
import type { ContentBlock, Message, ToolCall, Transcript, Turn } from './types';

/**
 * The key of a tool call in SessionViewState.toolCalls: its turn and its id.
 * ACP promises tool call ids unique within one ACP session only; a session
 * restored on a fresh one (history injection, a new agent process) may see
 * the agent number its calls from `tool-1` again, in a later turn. A turn
 * runs on one ACP session, so (promptId, toolCallId) names one call, as it
 * does in tetherd's store.
 */
export function toolCallKey(promptId: string | undefined, toolCallId: string): string {
  return JSON.stringify([promptId ?? '', toolCallId]);
}

/** The images and files of a prompt (undefined when it has none). */
export function attachmentsOf(prompt: unknown): PromptAttachment[] | undefined {
  if (!Array.isArray(prompt)) return undefined;
  const out: PromptAttachment[] = [];
  for (const b of prompt as ContentBlock[]) {
    if (b?.type === 'image' && typeof b.data === 'string') out.push({ kind: 'image', mimeType: b.mimeType ?? 'image/png', data: b.data });
    else if (b?.type === 'resource_link') out.push({ kind: 'file', name: b.name ?? b.uri ?? '', embedded: false });
    else if (b?.type === 'resource') {
      const uri = String((b.resource as { uri?: unknown } | undefined)?.uri ?? '');
      out.push({ kind: 'file', name: uri.split('/').pop() || uri, embedded: true });
    }
  }
  return out.length ? out : undefined;
}

/** The text blocks of a prompt, joined (other blocks are not shown). */
export function promptTextOf(prompt: unknown): string | undefined {
  if (!Array.isArray(prompt)) return undefined;
  const parts = prompt.flatMap((b) => (b && typeof b === 'object' && (b as { type?: unknown }).type === 'text' && typeof (b as { text?: unknown }).text === 'string' ? [(b as { text: string }).text] : []));
  return parts.join('\n');
}

/** Builds the timeline of a transcript (or one page of it), ordered by time. */
export function timelineOf(t: Pick<Transcript, 'turns' | 'messages' | 'toolCalls' | 'pendingPermissions'>): TimelineItem[] {
  const rank = { 'turn-start': 0, message: 1, tool: 2, permission: 3, 'turn-end': 4, 'pending-prompt': 5 } as const;
  const rows: { at: number; rank: number; n: number; item: TimelineItem }[] = [];
  let n = 0;
  const at = (iso: string | undefined) => (iso ? Date.parse(iso) || 0 : 0);
  // A turn's end never comes before what the turn said or did (a snapshot
  // turn without endedAt is placed after its last item).
  const lastOf: Record<string, number> = {};
  for (const x of [...t.messages, ...t.toolCalls]) if (x.promptId) lastOf[x.promptId] = Math.max(lastOf[x.promptId] ?? 0, at(x.createdAt));
  for (const turn of t.turns) {
    if (turn.kind === 'continue') rows.push({ at: at(turn.startedAt ?? turn.createdAt), rank: rank['turn-start'], n: n++, item: { type: 'turn-start', id: turn.promptId } });
    // Every ended turn has its end in the timeline: an outcome worth a
    // line, or only the link to what the turn changed.
    if (TERMINAL_TURN_STATES.has(turn.state))
      rows.push({ at: Math.max(at(turn.endedAt ?? turn.createdAt), lastOf[turn.promptId] ?? 0), rank: rank['turn-end'], n: n++, item: { type: 'turn-end', id: turn.promptId } });
  }
  for (const m of t.messages) rows.push({ at: at(m.createdAt), rank: rank.message, n: n++, item: { type: 'message', id: m.id } });
  for (const c of t.toolCalls) rows.push({ at: at(c.createdAt), rank: rank.tool, n: n++, item: { type: 'tool', id: toolCallKey(c.promptId, c.id) } });
  for (const p of t.pendingPermissions) rows.push({ at: at(p.createdAt), rank: rank.permission, n: n++, item: { type: 'permission', id: p.id } });
  rows.sort((a, b) => a.at - b.at || a.rank - b.rank || a.n - b.n);
  return rows.map((r) => r.item);
}

export function turnViewOf(t: Turn): TurnView {
  return {
    promptId: t.promptId,
    ...(t.seq !== undefined ? { seq: t.seq } : {}),
    kind: t.kind,
    state: t.state,
    stopReason: t.stopReason,
    error: t.error,
    interruptReason: t.interruptReason,
    continuesPromptId: t.continuesPromptId,
    text: promptTextOf(t.prompt),
    attachments: attachmentsOf(t.prompt),
    rewound: t.rewound === true,
    usage: t.usage,
    stalledAt: t.state === 'running' ? t.stalledAt : undefined,
  };
}

export const messageViewOf = (m: Message): MessageView => ({ id: m.id, promptId: m.promptId, role: m.role, text: m.text });

/**
 * The pages of the transcript the view holds. `next` is the token of the
 * page of older turns (absent: the view reaches the session's first turn).
 * `rewound` is what `session.rewound` events said, since the first page,
 * of any turn: an older page read before such an event (and landing after
 * it) would otherwise bring its turns back with their old marks.
 */
export interface HistoryView {
  next?: string;
  /** Older pages merged since the first page. */
  pages: number;
  loading: boolean;
  error?: string;
  rewound: Record<string, boolean>;
}

/** The history of a view loaded from one page (its latest): nothing older yet. */
export function historyOf(t: Transcript): HistoryView {
  return { ...(t.nextPageToken ? { next: t.nextPageToken } : {}), pages: 0, loading: false, rewound: {} };
}

/**
 * Merges an older page in front of what the view holds: its turns before
 * the loaded ones (by seq), its messages and tool calls, its timeline
 * before the loaded timeline. What the view already holds wins (it is at
 * least as new: the stream has been updating it), and nothing is added
 * twice: messages by id, turns by promptId, tool calls by promptId and id.
 * The page's plan, pending permissions and cursor are the session's
 * current ones, which the snapshot and the stream already gave: ignored.
 */
export function mergeOlderPage(s: SessionViewState, page: Transcript): SessionViewState {
  const turns = { ...s.turns };
  const older: Turn[] = [];
  for (const t of page.turns) {
    if (turns[t.promptId]) continue;
    const view = turnViewOf(t);
    const mark = s.history.rewound[t.promptId];
    turns[t.promptId] = mark === undefined ? view : { ...view, rewound: mark };
    older.push(t);
  }
  // In the session's order (the page is, but the order is the point).
  older.sort((a, b) => (a.seq ?? 0) - (b.seq ?? 0));
  const messages = { ...s.messages };
  const newMessages = page.messages.filter((m) => !messages[m.id]);
  for (const m of newMessages) messages[m.id] = messageViewOf(m);
  const toolCalls: Record<string, ToolCall> = { ...s.toolCalls };
  const newCalls = page.toolCalls.filter((c) => !toolCalls[toolCallKey(c.promptId, c.id)]);
  for (const c of newCalls) toolCalls[toolCallKey(c.promptId, c.id)] = c;
  const seen = new Set(s.timeline.map((x) => `${x.type}\n${x.id}`));
  const before = timelineOf({ turns: older, messages: newMessages, toolCalls: newCalls, pendingPermissions: [] }).filter((x) => !seen.has(`${x.type}\n${x.id}`));
  return {
    ...s,
    turns,
    turnOrder: [...older.map((t) => t.promptId), ...s.turnOrder],
    messages,
    toolCalls,
    timeline: [...before, ...s.timeline],
    history: { ...s.history, next: page.nextPageToken, pages: s.history.pages + 1, loading: false, error: undefined },
  };
}

/**
 * The numbers of turns (given oldest first) in their session, from 1: a
 * turn's seq, or (from a daemon that does not say, or a live turn whose
 * event did not) one more than the turn before it. Only the latest turns
 * may be loaded, so a turn's place among them is not its number.
 */
export function turnNumbers(turns: readonly Pick<TurnView, 'seq'>[]): number[] {
  let n = 0;
  return turns.map((t) => (n = t.seq !== undefined && t.seq > n ? t.seq : n + 1));
}

/** How many turns the session has, as far as the view knows: the latest turn's number. */
export function turnCount(s: Pick<SessionViewState, 'turnOrder' | 'turns'>): number {
  return turnNumbers(s.turnOrder.map((id) => s.turns[id] ?? {})).at(-1) ?? 0;
}
