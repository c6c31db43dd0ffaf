// The README's screenshot (docs/images/webshell.png): the shell with a
// session that ran a plain prompt (plan, a read tool call, the streamed
// reply) and a Markdown answer. Taken only when TETHER_SCREENSHOT names the
// output file (`make screenshot`): a PNG of live ids and times is not
// byte-stable, so ordinary test runs must not rewrite the committed one.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { test } from 'node:test';
import { appProblems, Daemon, launchBrowser } from './harness.mjs';

const out = process.env.TETHER_SCREENSHOT;
const T = { timeout: 15_000 };

test('screenshot of the Web Shell for the README', { skip: !out && 'TETHER_SCREENSHOT is not set', timeout: 90_000 }, async () => {
  const daemon = await Daemon.start();
  const browser = await launchBrowser({ width: 1280, height: 760 });
  try {
    const s = await daemon.api('POST', '/session', { agentProfileId: 'demo', cwd: daemon.workspace, title: 'Tour of the demo agent' });
    const prompts = [
      'What is in this directory?',
      '/echo Here is a **summary**:\n\n| file | lines |\n|---|---|\n| README.md | 3 |\n\n```sh\ncat README.md\n```',
    ];
    for (const text of prompts) {
      const r = await daemon.api('POST', `/session/${s.id}/prompt`, { prompt: [{ type: 'text', text }] });
      await daemon.waitTurn(s.id, (t) => t.turns.some((x) => x.promptId === r.promptId && x.state === 'completed'));
    }
    const page = await browser.newPage();
    await page.goto(daemon.shellUrl);
    const row = page.locator(`[data-testid=session-row][data-session-id="${s.id}"] .srow__open`);
    await row.waitFor(T);
    await row.click();
    const pane = page.locator(`[data-testid=pane][data-session-id="${s.id}"]`);
    await pane.locator('[data-testid=connection][data-conn=open]').waitFor(T);
    await pane.getByText('cat README.md').last().waitFor(T);
    mkdirSync(dirname(out), { recursive: true });
    await page.screenshot({ path: out });
    assert.deepEqual(appProblems(browser.problems), []);
  } finally {
    await browser.close();
    await daemon.stop();
  }
});
