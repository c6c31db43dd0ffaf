// The recovery report in the Web Shell against the real tetherd: the demo
// agent's /work writes a file, runs `ls` and is killed with SIGKILL (its
// process group) in `sleep 3600`; the banner names the file it wrote, the
// tool calls that finished and the command still running, the workspace
// panel lists the file as the turn's change, and Continue completes the
// turn.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { appProblems, Daemon, launchBrowser, openSession, shot } from './harness.mjs';

const T = { timeout: 15_000 };

let daemon;
let browser;

before(async () => {
  daemon = await Daemon.start();
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await daemon?.stop();
});

describe('Web Shell recovery report', { concurrency: false }, () => {
  test('kill -9 of the agent mid-tool: the banner lists the file it wrote, Continue goes on', { timeout: 60_000 }, async () => {
    const cwd = join(daemon.workspace, 'report');
    mkdirSync(cwd, { recursive: true });
    const s = await daemon.api('POST', '/session', { agentProfileId: 'demo', cwd, title: 'Recovery report' });
    const page = await browser.newPage();
    const problems = [];
    page.on('pageerror', (e) => problems.push({ kind: 'pageerror', text: String(e) }));
    page.on('console', (m) => m.type() === 'error' && problems.push({ kind: 'console', text: m.text() }));
    const pane = await openSession(page, daemon, s.id, T);

    const box = pane.getByRole('textbox', { name: 'Message' });
    await box.fill('/work made-by-agent.txt');
    await box.press('Enter');
    await pane.locator('[data-testid=tool-call][data-tool-status=in_progress]', { hasText: 'sleep 3600' }).waitFor(T);
    const { executor } = await daemon.api('GET', `/session/${s.id}`);
    assert.ok(executor.pid > 0, `the standalone agent's pid: ${JSON.stringify(executor)}`);
    process.kill(-executor.pid, 'SIGKILL'); // the agent and its running command

    const banner = pane.getByTestId('recovery-banner');
    await banner.waitFor(T);
    const files = banner.getByTestId('banner-files');
    await files.waitFor(T);
    assert.equal(await files.textContent(), 'Changed since this turn began: made-by-agent.txt (added)');
    assert.match(await banner.getByTestId('banner-finished').textContent(), /Write made-by-agent\.txt, Run `ls`/);
    assert.match(await banner.getByTestId('banner-running').textContent(), /Run `sleep 3600`/);
    await shot(page, 'report-01-banner');
    // The workspace panel says the same: the interrupted turn's changes.
    await pane.getByTestId('turn-changes').first().click();
    const changes = pane.getByTestId('ws-changes');
    await changes.locator('[data-testid=ws-changed-file]').first().waitFor(T);
    assert.deepEqual(await changes.locator('[data-testid=ws-changed-file]').evaluateAll((els) => els.map((e) => `${e.dataset.path}:${e.dataset.status}`)), [
      'made-by-agent.txt:added',
    ]);
    await shot(page, 'report-01b-changes');

    await banner.getByRole('button', { name: 'Continue the interrupted turn' }).click();
    await banner.waitFor({ state: 'detached', ...T });
    await pane.locator('[data-testid=agent-message]', { hasText: 'made-by-agent.txt (added)' }).waitFor(T);
    await shot(page, 'report-02-continued');
    assert.deepEqual(appProblems(problems), []);
  });
});
