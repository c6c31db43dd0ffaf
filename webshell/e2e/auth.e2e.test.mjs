// A session whose agent needs credentials: the Web Shell shows what to do
// (the daemon's agent_auth_required message, the agent's auth methods and
// their hints), not a generic failure. The profile runs the demo agent
// with --auth-required, which answers every session call with ACP -32000.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { appProblems, Daemon, launchBrowser, shot, TETHERD } from './harness.mjs';

const T = { timeout: 20_000 };
const HINT = 'set authMethod: demo-login in the profile';

let daemon;
let browser;

before(async () => {
  daemon = await Daemon.start({
    agentsYaml: (d) =>
      `agents:\n  - id: locked\n    displayName: Locked agent\n    command: ${JSON.stringify(TETHERD)}\n` +
      `    args: ${JSON.stringify(['demo-agent', '--state-dir', join(d.root, 'locked-state'), '--auth-required'])}\n`,
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await daemon?.stop();
});

describe('Web Shell: an agent that needs credentials', { concurrency: false }, () => {
  test('the session shows the auth banner with the message, the methods and Try again', { timeout: 60_000 }, async () => {
    const s = await daemon.api('POST', '/session', { agentProfileId: 'locked', cwd: daemon.workspace });
    const page = await browser.newPage();
    await page.goto(daemon.shellUrl);
    const row = page.locator(`[data-testid=session-row][data-session-id="${s.id}"] .srow__open`);
    await row.waitFor(T);
    await row.click();
    const pane = page.locator(`[data-testid=pane][data-session-id="${s.id}"]`);
    const banner = pane.getByTestId('auth-banner');
    await banner.waitFor(T);
    assert.match(await banner.getByTestId('auth-message').innerText(), new RegExp(`needs credentials: ${HINT}`));
    assert.equal(await pane.getByTestId('needs-resume').count(), 0, 'no generic resume offer beside it');

    // Try again: the agent still refuses; the refused resume's problem
    // names the methods, which the banner lists with their hints.
    await banner.getByTestId('auth-retry').click();
    const method = banner.locator('[data-testid=auth-methods] [data-method-id=demo-login]');
    await method.waitFor(T);
    assert.match(await method.innerText(), /Demo login/);
    assert.match(await method.innerText(), new RegExp(HINT));
    assert.equal(await pane.locator('.notice--error').count(), 0, 'no generic error notice');
    await shot(page, 'auth-required');
  });

  test('no console errors from the app', () => {
    // The refused resume is a 502 the browser reports as a failed load.
    assert.deepEqual(appProblems(browser.problems).filter((p) => !/502/.test(p.text)), []);
  });
});
