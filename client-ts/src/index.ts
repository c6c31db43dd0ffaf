/**
 * @tether/client — the TypeScript SDK of tetherd.
 *
 * Generated from api/openapi.yaml (src/gen, never edited): every schema as
 * a type, every operation as a function (`sdk.*`). Hand-written on top:
 * TetherClient / SessionClient, typed problem errors, the resumable
 * EventStream and continuation outcomes.
 */
export {
  TetherClient,
  SessionClient,
  type TetherClientOptions,
  type CallOptions,
  type TranscriptPageOptions,
  type PromptOptions,
  type ContinueOptions,
  type ContinueOutcome,
  type SessionEventsOptions,
  type GlobalEventsOptions,
  type WaitForTurnOptions,
  type NativeStreamTarget,
  type NativeEventSourceOptions,
} from './client.js';
export { WorkspaceClient, type ReadRange, type DiffOptions } from './workspace.js';
export { TerminalClient, TerminalConnection, type AttachOptions, type WebSocketFactory, type WebSocketLike } from './terminal.js';
export {
  EventStream,
  resyncFromSnapshot,
  isControlEvent,
  isTurnTerminalEvent,
  EVENT_TYPES,
  CONTROL_EVENT_TYPES,
  TURN_TERMINAL_EVENT_TYPES,
  type StreamEvent,
  type StreamEventOf,
  type ControlEvent,
  type ControlEventType,
  type DurableEvent,
  type TurnTerminalEvent,
  type TurnTerminalEventType,
  type StreamState,
  type BackoffOptions,
  type EventStreamOptions,
  type EventStreamTransport,
  type TranscriptSource,
} from './events.js';
export {
  TetherError,
  TetherProblem,
  TetherTimeoutError,
  TetherNetworkError,
  isTetherProblem,
  isAbortError,
  type KnownProblemCode,
  type ProblemCode,
} from './errors.js';
export { API_VERSION, TetherVersionError, apiCompatible } from './version.js';
export { SSEParser, SSEParseError, parseSSE, type SSEFrame, type SSEParserOptions } from './sse.js';
export { parseCursor, formatCursor, compareCursors, earliestCursor, type ParsedCursor } from './cursor.js';

// The contract's schemas and operation types, exactly as generated
// (plus the runtime objects of its named enums: EventType, SessionState, ...).
export * from './gen/types.gen.js';
// Every operation as a generated function; pass `client: tether.gen`.
export * as sdk from './gen/sdk.gen.js';
export { createClient, createConfig, type Client, type Config as ClientConfig } from './gen/client/index.js';
