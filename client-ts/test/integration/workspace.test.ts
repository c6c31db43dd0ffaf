// The workspace API through the SDK against the real tetherd: files of the
// session's directory, confinement refusals as typed problems.
import { writeFileSync, mkdirSync } from 'node:fs';
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

describe('tetherd: workspace', () => {
  it('lists and reads the session directory, and refuses paths that leave it', async () => {
    mkdirSync(join(d.cwd, 'ws-sdk'), { recursive: true });
    writeFileSync(join(d.cwd, 'ws-sdk', 'hello.txt'), 'héllo from the SDK\n'.repeat(3));
    const s = await c.createSession({ agentProfileId: 'demo', cwd: d.cwd, title: 'workspace' });
    const ws = c.session(s.id).workspace;

    const listing = await ws.list('ws-sdk');
    expect(listing.entries.map((e) => `${e.name}:${e.type}`)).toEqual(['hello.txt:file']);
    const range = await ws.read('ws-sdk/hello.txt', { offset: 0, length: 5 });
    expect(range.truncated).toBe(true);
    expect(await ws.readText('ws-sdk/hello.txt')).toBe('héllo from the SDK\n'.repeat(3));
    expect((await ws.stat('ws-sdk')).type).toBe('dir');

    for (const [path, code] of [
      ['../etc/passwd', 'workspace_path_invalid'],
      ['/etc/passwd', 'workspace_path_invalid'],
      ['ws-sdk/missing', 'workspace_path_not_found'],
    ] as const) {
      const err = await ws.read(path).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TetherProblem);
      expect((err as TetherProblem).code).toBe(code);
    }
  });

  it('diffs the working tree against a turn checkpoint: what the turn changed', async () => {
    const dir = join(d.cwd, 'ws-turn');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'before.txt'), 'there before the turn\n');
    const s = c.session((await c.createSession({ agentProfileId: 'demo', cwd: dir, title: 'checkpoint' })).id);
    await s.prompt('/tool write made.txt made by the turn', { promptId: 't1' });
    expect((await s.waitForTurn('t1')).type).toBe('turn.completed');
    const d1 = await s.workspace.diff({ turn: 't1', patch: true });
    expect(d1.against).toBe('turn:t1');
    expect(d1.files.map((f) => `${f.path}:${f.status}`)).toEqual(['made.txt:added']);
    expect(d1.checkpoint?.turn).toBe('t1');
    expect(d1.headMoved).toBe(false);
    expect(d1.patch).toContain('+made by the turn');
    const err = await s.workspace.diff({ turn: 'never-ran' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TetherProblem);
    expect((err as TetherProblem).code).toBe('workspace_checkpoint_not_found');

    // A second turn: t1 alone (to t2's start) keeps what t1 made only.
    await s.prompt('/tool write second.txt made by the second turn', { promptId: 't2' });
    expect((await s.waitForTurn('t2')).type).toBe('turn.completed');
    const since = await s.workspace.diff({ turn: 't1' });
    expect(since.files.map((f) => f.path).sort()).toEqual(['made.txt', 'second.txt']);
    const alone = await s.workspace.diff({ turn: 't1', toTurn: 't2' });
    expect(alone.files.map((f) => `${f.path}:${f.status}`)).toEqual(['made.txt:added']);
    expect(alone.toCheckpoint?.turn).toBe('t2');
  });
});
