// Rewind, undo, fork and hand-off through the SDK against the real
// tetherd and the demo agent (docs/rewind.md): the files on disk, the
// marks in the transcript, the fork's origin, and the typed refusals.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TetherProblem, type TetherClient as TC } from '../../src/index.js';
import { Daemon } from '../helpers/daemon.js';
import { clientFor } from '../helpers/util.js';

let d: Daemon;
let c: TC;

beforeAll(async () => {
  d = await Daemon.start();
  c = clientFor(d);
});
afterAll(async () => {
  await d?.dispose();
});

describe('tetherd: rewind and fork', () => {
  it('rewinds to a turn (dry run first), undoes it, forks at a turn into its own directory and hands off', async () => {
    const dir = join(d.cwd, 'rewind-sdk');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'notes.txt'), 'before\n');
    const s = c.session((await c.createSession({ agentProfileId: 'demo', cwd: dir, title: 'rewind' })).id);
    for (const [id, text] of [
      ['r1', 'first draft'],
      ['r2', 'second draft'],
    ] as const) {
      await s.prompt(`/tool write notes.txt ${text}`, { promptId: id });
      expect((await s.waitForTurn(id)).type).toBe('turn.completed');
    }
    const dry = await s.rewind('r1', { dryRun: true });
    expect(dry.dryRun).toBe(true);
    expect(dry.files.map((f) => `${f.path}:${f.status}`)).toEqual(['notes.txt:modified']);
    expect(readFileSync(join(dir, 'notes.txt'), 'utf8')).toBe('second draft');

    const done = await s.rewind('r1');
    expect(done.rewind?.rewound).toEqual(['r2']);
    expect(readFileSync(join(dir, 'notes.txt'), 'utf8')).toBe('first draft');
    const tr = await s.transcript();
    expect(tr.turns.map((t) => [t.promptId, t.rewound ?? false])).toEqual([['r1', false], ['r2', true]]);

    const undo = await s.undoRewind();
    expect(undo.rewind?.undoes).toBe(done.rewind?.id);
    expect(readFileSync(join(dir, 'notes.txt'), 'utf8')).toBe('second draft');

    const forkDir = join(d.cwd, 'rewind-sdk-fork');
    const fork = await s.fork({ atTurn: 'r1', cwd: forkDir });
    expect(fork.forkedFrom).toEqual({ sessionId: s.id, promptId: 'r1' });
    expect(fork.cwd).toBe(forkDir);
    expect(readFileSync(join(forkDir, 'notes.txt'), 'utf8')).toBe('first draft');

    const handed = await s.handoff('demo');
    expect(handed.cwd).toBe(dir);
    expect(handed.forkedFrom?.handoff).toBe(true);

    for (const [call, code] of [
      [() => s.rewind('no-such-turn'), 'turn_not_found'],
      [() => s.fork({ atTurn: 'r1', cwd: dir }), 'workspace_target_not_empty'],
    ] as const) {
      const err = await call().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TetherProblem);
      expect((err as TetherProblem).code).toBe(code);
    }
  });
});
