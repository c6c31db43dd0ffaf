// The README's `js` examples and examples/*.mjs, run as plain Node
// programs (importing the built package, `@tether/client`) against a real
// tetherd. `npm test` builds dist/ first.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TetherClient } from '../src/index.js';
import { CLIENT_DIR, Daemon } from './helpers/daemon.js';
import { clientFor, readUntil } from './helpers/util.js';

let d: Daemon;
let c: TetherClient;

beforeAll(async () => {
  if (!existsSync(join(CLIENT_DIR, 'dist/index.js'))) throw new Error('dist/ is missing: run `npm run build` first');
  d = await Daemon.start();
  c = clientFor(d);
});
afterAll(async () => {
  await d?.dispose();
});

function runNode(args: string[], opts: { input?: string; env?: Record<string, string> } = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, args, {
      cwd: CLIENT_DIR,
      env: { ...process.env, TETHER_URL: d.baseUrl, TETHER_TOKEN: d.token, TETHER_CWD: d.cwd, ...opts.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    p.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const timer = setTimeout(() => p.kill('SIGKILL'), 45_000);
    p.on('error', reject);
    p.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    p.stdin.end(opts.input ?? '');
  });
}

const readme = readFileSync(join(CLIENT_DIR, 'README.md'), 'utf8');
const blocks: string[] = [];
const titles: string[] = [];
let heading = '';
for (const m of readme.matchAll(/^## (.*)$|^```js\n([\s\S]*?)^```$/gm)) {
  if (m[1] !== undefined) heading = m[1];
  else {
    blocks.push(m[2]!);
    titles.push(heading);
  }
}

describe('README examples', () => {
  it('has runnable examples', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(5);
  });

  it.each(blocks.map((code, i) => [i + 1, titles[i]!, code] as const))(
    'block %i (%s) runs and exits 0',
    async (_i, _title, code) => {
      const r = await runNode(['--input-type=module', '-'], { input: code });
      expect(r.code, `stdout:\n${r.stdout}\nstderr:\n${r.stderr}`).toBe(0);
    },
  );

  it('the chat block streams the demo agent’s reply', async () => {
    const r = await runNode(['--input-type=module', '-'], { input: blocks[0]! });
    expect(r.stdout).toContain('You said: hello');
    expect(r.stdout).toContain('turn.completed end_turn');
  });

  it('the resync block goes through resync_required and the snapshot', async () => {
    const r = await runNode(['--input-type=module', '-'], { input: blocks[1]! });
    expect(r.stdout).toContain('resync: epoch_mismatch');
    expect(r.stdout).toMatch(/\[stream\] catching_up[\s\S]*\[stream\] open/);
  });

  it('the transcript pages block pages back from the latest turns', async () => {
    const r = await runNode(['--input-type=module', '-'], { input: blocks[2]! });
    expect(r.stdout).toBe('page: p1 p2 (older turns exist)\npage: p0 (the first turn)\n');
  });

  it('the continue block is accepted, then declined', async () => {
    const r = await runNode(['--input-type=module', '-'], { input: blocks[3]! });
    expect(r.stdout).toContain('turn.interrupted');
    expect(r.stdout).toContain('continuing crashed as continue-1');
    expect(r.stdout).toContain('declined nothing_to_continue');
  });
});

describe('examples/*.mjs against a live daemon', () => {
  it('chat.mjs streams the reply to stdout and exits 0', async () => {
    const r = await runNode(['examples/chat.mjs', '/stream', '3']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe('chunk 1\nchunk 2\nchunk 3\n\n');
  });

  it('chat.mjs reuses TETHER_SESSION', async () => {
    const s = await c.createSession({ agentProfileId: 'demo', cwd: d.cwd });
    const r = await runNode(['examples/chat.mjs', '/echo', 'again'], { env: { TETHER_SESSION: s.id } });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe('again');
  });

  it('continue.mjs creates an interruption itself and continues it', async () => {
    const r = await runNode(['examples/continue.mjs']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('turn.interrupted');
    expect(r.stderr).toContain('[turn.completed]');
  });

  it('continue.mjs continues a session interrupted by kill -9 (TETHER_SESSION)', async () => {
    const s = c.session((await c.createSession({ agentProfileId: 'demo', cwd: d.cwd })).id);
    await s.prompt('/sleep 30000', { promptId: 'long' });
    await readUntil(s.events(), (e) => e.type === 'message.added' && e.data.role === 'agent' && e.data.promptId === 'long');
    await d.restart({ crash: true });
    expect((await s.context()).recovery.kind).toBe('interrupted_turn');
    const r = await runNode(['examples/continue.mjs'], { env: { TETHER_SESSION: s.id } });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('recovery: interrupted_turn');
    // The demo agent answers a continuation by what interrupted it (it never echoes the hidden prompt).
    expect(r.stdout).toContain('Continuing where I left off (interrupted by daemon restart)');
  });

  it('exits non-zero without TETHER_URL/TETHER_TOKEN', async () => {
    const r = await runNode(['examples/chat.mjs'], { env: { TETHER_URL: '', TETHER_TOKEN: '' } });
    expect(r.code).toBe(2);
  });
});
