// Modes, config options and slash commands against the real tetherd and
// the demo agent (modes default/plan/auto, option "model").
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TetherProblem, type TetherClient as TC } from '../../src/index.js';
import { Daemon } from '../helpers/daemon.js';
import { clientFor, isTerminalFor, readUntil } from '../helpers/util.js';

let d: Daemon;
let c: TC;

beforeAll(async () => {
  d = await Daemon.start();
  c = clientFor(d);
});
afterAll(async () => {
  await d?.dispose();
});

describe('tetherd: modes, options, commands', () => {
  it('lists the slash commands, sets a mode and the model, and the agent holds them', async () => {
    const s = await c.createSession({ agentProfileId: 'demo', cwd: d.cwd, title: 'options' });
    const session = c.session(s.id);
    await session.prompt('/echo hi', { promptId: 'p1' });
    await session.waitForTurn('p1');

    const commands = await session.commands();
    expect(commands.map((x) => x.name)).toContain('options');
    expect(commands.find((x) => x.name === 'echo')?.input?.hint).toBe('TEXT');

    const bad = await session.setMode('nope').catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(TetherProblem);
    expect((bad as TetherProblem).code).toBe('unknown_mode');

    const mode = await session.setMode('plan');
    expect(mode.applied).toBe(true);
    expect(mode.context.currentMode).toBe('plan');
    const model = await session.setConfigOption('model', 'demo-smart');
    expect(model.context.configOptions?.find((o) => o['id'] === 'model')?.['currentValue']).toBe('demo-smart');

    let reply = '';
    await readUntil(session.events(), isTerminalFor('p2'), {
      onEvent: async (e) => {
        if (e.type === 'replay_complete') await session.prompt('/options', { promptId: 'p2' });
        if ((e.type === 'message.added' || e.type === 'message.chunk') && e.data.role === 'agent' && e.data.promptId === 'p2') {
          reply += e.data.text;
        }
      },
    });
    expect(reply).toBe('mode=plan model=demo-smart');
  });
});
