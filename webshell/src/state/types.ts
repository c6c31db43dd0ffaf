// The daemon's shapes, as the SDK (generated from api/openapi.yaml) types
// them. Only types are imported here, so the state logic runs in unit tests
// without the SDK's runtime.
export type {
  AgentProfile,
  AuthMethod,
  AvailableCommand,
  Budget,
  CancelResult,
  ContentBlock,
  Executor,
  ExecutorHost,
  ExecutorStatus,
  GitDiff,
  GitDiffFile,
  InboxItem,
  InboxList,
  Message,
  PermissionOption,
  PermissionRequest,
  PlanEntry,
  PromptAccepted,
  RecoverySummary,
  Session,
  SessionContext,
  SessionMode,
  SessionState,
  SessionStatus,
  SessionUpdate,
  Task,
  TetherEvent,
  ToolCall,
  Transcript,
  Turn,
  Usage,
  WorkspaceAvailability,
  WorkspaceEntry,
  WorkspaceFile,
  WorkspaceListing,
} from '@tether/client';

import type {
  CancelResult,
  ContentBlock,
  GitDiff,
  OptionChangeResult,
  PermissionRequest,
  PromptAccepted,
  RecoverySummary,
  Session,
  SessionContext,
  SessionStatus,
  SessionUpdate,
  TetherEvent,
  Transcript,
  WorkspaceFile,
  WorkspaceListing,
} from '@tether/client';
import type { TerminalApi } from './terminal-link';

/** The states of an event stream (the SDK's EventStream.state). */
export type StreamState = 'connecting' | 'open' | 'catching_up' | 'closed';

/** What SessionClient.continue() resolves to (the SDK's ContinueOutcome). */
export type ContinueOutcome =
  | {
      kind: 'accepted';
      promptId: string;
      state?: string;
      interruption: RecoverySummary;
      eventEpoch?: string;
      cursor?: string;
    }
  | { kind: 'declined'; reason: string; recovery?: RecoverySummary; problem?: unknown }
  | { kind: 'unknown'; error: unknown; retrySafe: boolean };

/** The part of the SDK's EventStream the shell uses. */
export interface EventStreamLike extends AsyncIterable<TetherEvent> {
  readonly state: StreamState;
  readonly cursor: string | undefined;
  close(): void;
  resyncFrom(cursor: string): void;
}

export interface StreamOptions {
  cursor?: string;
  signal?: AbortSignal;
  onStateChange?: (state: StreamState, previous: StreamState) => void;
}

interface Call {
  signal?: AbortSignal;
}

/**
 * The part of the SDK's SessionClient the shell uses; the real one comes
 * from `TetherClient.session(id)`, tests pass a fake.
 */
export interface SessionApi {
  readonly id: string;
  get(o?: Call): Promise<Session>;
  /** One page of turns (`limit`, the latest first; `pageToken`, a page's nextPageToken), or the whole transcript without `limit`. */
  transcript(o?: Call & { limit?: number; pageToken?: string }): Promise<Transcript>;
  context(o?: Call): Promise<SessionContext>;
  status(o?: Call): Promise<SessionStatus>;
  prompt(prompt: ContentBlock[] | string, o?: { promptId?: string; multitask?: 'enqueue' | 'reject' }): Promise<PromptAccepted>;
  continue(o?: { promptId?: string }): Promise<ContinueOutcome>;
  /** keepQueue: only the running turn is cancelled; the queued ones stay queued. */
  cancel(o?: Call & { keepQueue?: boolean }): Promise<CancelResult>;
  /** Withdraws a queued turn (DELETE /session/{id}/turns/{promptId}). */
  withdraw(promptId: string, o?: Call): Promise<unknown>;
  resume(o?: Call): Promise<SessionStatus>;
  answerPermission(requestId: string, answer: { optionId: string } | { outcome: 'cancelled' }, o?: Call): Promise<PermissionRequest>;
  events(opts?: StreamOptions): EventStreamLike;
  setMode(modeId: string, o?: Call): Promise<OptionChangeResult>;
  setConfigOption(optionId: string, value: string | boolean, o?: Call): Promise<OptionChangeResult>;
  /** PATCH /session/{id} (its budget, whole); absent where the shell cannot change the session. */
  update?(body: SessionUpdate, o?: Call): Promise<Session>;
}

/** One config option as the composer's pickers show it. */
export type ConfigOptionView =
  | { id: string; name: string; type: 'select'; value: string; choices: { value: string; name: string }[] }
  | { id: string; name: string; type: 'boolean'; value: boolean };

/** The agent's modes and config options, from the context and session.options_changed. */
export interface SessionOptionsView {
  modes: { id: string; name: string; description?: string }[];
  currentMode?: string;
  configOptions: ConfigOptionView[];
}

/**
 * The part of the SDK's SessionClient the workspace panel uses: the
 * session's files and git state, and its terminals (`client.session(id)`
 * fits; tests pass a fake).
 */
export interface WorkspaceApi {
  readonly workspace: {
    list(path?: string): Promise<WorkspaceListing>;
    read(path: string, range?: { offset?: number; length?: number }): Promise<WorkspaceFile>;
    diff(opts?: { against?: string; turn?: string; toTurn?: string; path?: string; patch?: boolean }): Promise<GitDiff>;
  };
  readonly terminals: TerminalApi;
}
