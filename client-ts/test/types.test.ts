// Type-level tests: checked by `tsc --noEmit` (npm run typecheck, part of
// `make test-ts`) and by vitest at run time (expectTypeOf is a no-op there).
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  EVENT_TYPES,
  EventType,
  type ContinueOutcome,
  type ControlEvent,
  type DurableEvent,
  type StreamEvent,
  type StreamEventOf,
  type TetherEvent,
  type TurnTerminalEvent,
  type EventType as EventTypeT,
  type TurnCompletedData,
  type ResyncRequiredData,
  type RecoverySummary,
  TetherProblem,
} from '../src/index.js';

type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

// Every EventType of the contract is a member of the StreamEvent union, and vice versa.
type MissingFromUnion = Exclude<EventTypeT, StreamEvent['type']>;
type ExtraInUnion = Exclude<StreamEvent['type'], EventTypeT>;
const missing: Equals<MissingFromUnion, never> = true;
const extra: Equals<ExtraInUnion, never> = true;
void missing;
void extra;

describe('StreamEvent union', () => {
  it('covers every EventType in the contract, and nothing else', () => {
    expectTypeOf<MissingFromUnion>().toEqualTypeOf<never>();
    expectTypeOf<ExtraInUnion>().toEqualTypeOf<never>();
    expectTypeOf<StreamEvent>().toEqualTypeOf<TetherEvent>();
  });

  it('is discriminated by type: each member has its payload type', () => {
    expectTypeOf<StreamEventOf<'turn.completed'>['data']>().toEqualTypeOf<TurnCompletedData>();
    expectTypeOf<StreamEventOf<'resync_required'>['data']>().toEqualTypeOf<ResyncRequiredData>();
    const narrow = (e: StreamEvent): string | undefined => {
      switch (e.type) {
        case 'message.chunk':
          return e.data.text; // typed as string
        case 'turn.failed':
          return `${e.data.code}: ${e.data.message}`;
        case 'resync_required':
          return e.data.cursor;
        default:
          return undefined;
      }
    };
    expect(narrow({ type: 'message.chunk', data: { messageId: 1, role: 'agent', text: 'x' } })).toBe('x');
  });

  it('splits into control and durable events', () => {
    expectTypeOf<ControlEvent['type']>().toEqualTypeOf<'resync_required' | 'replay_complete' | 'stream_lagged'>();
    type DurableTypes = DurableEvent['type'];
    expectTypeOf<Extract<DurableTypes, ControlEvent['type']>>().toEqualTypeOf<never>();
    expectTypeOf<TurnTerminalEvent['type']>().toEqualTypeOf<
      'turn.completed' | 'turn.failed' | 'turn.cancelled' | 'turn.interrupted'
    >();
  });

  it('ContinueOutcome is a discriminated union with the documented members', () => {
    type Accepted = Extract<ContinueOutcome, { kind: 'accepted' }>;
    type Declined = Extract<ContinueOutcome, { kind: 'declined' }>;
    type Unknown = Extract<ContinueOutcome, { kind: 'unknown' }>;
    expectTypeOf<Accepted['interruption']>().toEqualTypeOf<RecoverySummary>();
    expectTypeOf<Accepted['eventEpoch']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<Declined['problem']>().toEqualTypeOf<TetherProblem>();
    expectTypeOf<Unknown['retrySafe']>().toEqualTypeOf<boolean>();
  });

  it('at run time, EVENT_TYPES equals the EventType enum of api/openapi.yaml', () => {
    const yaml = readFileSync(resolve(__dirname, '../../api/openapi.yaml'), 'utf8');
    const m = /\n {4}EventType:\n(?: {6}.*\n)*? {6}enum: \[([^\]]*)\]/.exec(yaml);
    expect(m, 'EventType enum in the contract').not.toBeNull();
    const fromContract = m![1]!.split(',').map((s) => s.trim()).sort();
    expect([...EVENT_TYPES].sort()).toEqual(fromContract);
    expect(Object.values(EventType).sort()).toEqual(fromContract);
  });
});
