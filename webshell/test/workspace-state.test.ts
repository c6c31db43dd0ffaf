// The workspace panel's decisions: when it is enabled (the executor, never
// the agent), which checkpoints show one turn's changes, and a patch split
// into files and classified lines.
import { describe, expect, it } from 'vitest';
import { parsePatch, turnRanges, workspaceGate } from '../src/state/workspace';
import type { TurnView } from '../src/state/session-state';
import { status } from './fixtures';

describe('workspaceGate', () => {
  const cases: { name: string; st: Parameters<typeof workspaceGate>[0]; want: ReturnType<typeof workspaceGate> }[] = [
    { name: 'no status yet', st: undefined, want: { kind: 'loading' } },
    { name: 'ready with the agent running', st: status('S', { workspace: { status: 'ready' } }), want: { kind: 'ready' } },
    {
      name: 'ready while the agent cannot resume',
      st: status('S', { isAgentRunning: false, resumeReason: 'not_resumable', executorStatus: 'stopped', workspace: { status: 'ready' } }),
      want: { kind: 'ready' },
    },
    {
      name: 'ready while the agent failed to start',
      st: status('S', { isAgentRunning: false, executorStatus: 'error', errorCode: 'agent_auth_required', workspace: { status: 'ready' } }),
      want: { kind: 'ready' },
    },
    {
      name: 'the host is starting',
      st: status('S', { executorStatus: 'starting', workspace: { status: 'starting', errorCode: 'executor_unavailable', errorMessage: 'executor host "local" is not connected yet' } }),
      want: { kind: 'starting', message: 'executor host "local" is not connected yet' },
    },
    {
      name: 'the host is lost',
      st: status('S', { workspace: { status: 'unavailable', errorCode: 'executor_unavailable', errorMessage: 'gone' } }),
      want: { kind: 'unavailable', code: 'executor_unavailable', message: 'gone' },
    },
    { name: 'an older daemon, agent starting', st: status('S', { executorStatus: 'starting' }), want: { kind: 'starting' } },
    { name: 'an older daemon, agent stopped', st: status('S', { executorStatus: 'stopped', isAgentRunning: false }), want: { kind: 'ready' } },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(workspaceGate(c.st)).toEqual(c.want);
    });
  }
});

describe('turnRanges', () => {
  const turn = (promptId: string, state: TurnView['state'], kind: TurnView['kind'] = 'prompt', text?: string): TurnView => ({ promptId, state, kind, ...(text ? { text } : {}) });
  it('each turn that ran ends where the next one that ran began; queued turns are left out', () => {
    const turns = {
      a: turn('a', 'completed', 'prompt', 'first'),
      b: turn('b', 'interrupted'),
      c: turn('c', 'completed', 'continue'),
      q: turn('q', 'queued', 'prompt', 'waiting'),
      d: turn('d', 'running'),
    };
    const got = turnRanges({ turnOrder: ['a', 'b', 'c', 'q', 'd'], turns });
    expect(got.map((r) => [r.promptId, r.index, r.toTurn])).toEqual([
      ['a', 1, 'b'],
      ['b', 2, 'c'],
      ['c', 3, 'd'],
      ['d', 4, undefined],
    ]);
    expect(got[0]!.text).toBe('first');
    expect(got[2]!.kind).toBe('continue');
  });
  it('no turn: nothing', () => {
    expect(turnRanges({ turnOrder: [], turns: {} })).toEqual([]);
  });
});

describe('parsePatch', () => {
  const patch = [
    'diff --git a/src/a.go b/src/a.go',
    'index 1111111..2222222 100644',
    '--- a/src/a.go',
    '+++ b/src/a.go',
    '@@ -1,3 +1,3 @@',
    ' package a',
    '--- a comment that starts with dashes',
    '+++ a line that starts with pluses',
    ' end',
    'diff --git a/gone.txt b/gone.txt',
    'deleted file mode 100644',
    'index 3333333..0000000',
    '--- a/gone.txt',
    '+++ /dev/null',
    '@@ -1 +0,0 @@',
    '-bye',
    '\\ No newline at end of file',
    '',
  ].join('\n');

  it('splits files and classifies lines: headers are never additions or deletions', () => {
    const files = parsePatch(patch);
    expect(files.map((f) => f.path)).toEqual(['src/a.go', 'gone.txt']);
    const kinds = (i: number) => files[i]!.lines.map((l) => l.kind);
    expect(kinds(0)).toEqual(['meta', 'meta', 'meta', 'meta', 'hunk', 'ctx', 'del', 'add', 'ctx']);
    expect(kinds(1)).toEqual(['meta', 'meta', 'meta', 'meta', 'meta', 'hunk', 'del', 'meta']);
  });

  it('an empty patch has no files', () => {
    expect(parsePatch('')).toEqual([]);
  });
});
