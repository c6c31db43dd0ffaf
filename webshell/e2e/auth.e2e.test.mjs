// An agent that needs credentials: the Web Shell shows what to do (the
// daemon's agent_auth_required message, the agent's auth methods and their
// hints), not a generic failure. Two profiles run the demo agent with
// --auth-required, which answers every session call with ACP -32000:
// `locked`, whose capability probe at start-up sees it, so the New-session
// dialog says so before anything is created and the daemon refuses the
// session (409); and `gated`, whose probe never ends (it starts slowly in
// the directory probes run in), so nothing is known when its session is
// created, which then shows the auth banner, as for an agent tetherd has
// not seen yet.
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { appProblems, Daemon, launchBrowser, shot, TETHERD } from './harness.mjs';

const T = { timeout: 20_000 };
const HINT = 'set authMethod: demo-login in the profile';

let daemon;
let browser;

/** An agents.yaml entry of the demo agent with --auth-required. */
const profile = (d, id, name, flags) =>
  `  - id: ${id}\n    displayName: ${name}\n    command: ${JSON.stringify(TETHERD)}\n` +
  `    args: ${JSON.stringify(['demo-agent', '--state-dir', join(d.root, `${id}-state`), '--auth-required', ...flags])}\n`;

before(async () => {
  daemon = await Daemon.start({
    agentsYaml: (d) =>
      `agents:\n${profile(d, 'locked', 'Locked agent', [])}` +
      `${profile(d, 'gated', 'Gated agent', ['--startup-delay', '1h', '--startup-delay-in', tmpdir()])}`,
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await daemon?.stop();
});

describe('Web Shell: an agent that needs credentials', { concurrency: false }, () => {
  test('the New-session dialog says so before creating, and keeps the refusal with the hints', { timeout: 60_000 }, async () => {
    // The probe of `locked` has seen it ask for credentials.
    const deadline = Date.now() + T.timeout;
    for (;;) {
      const { agents } = await daemon.api('GET', '/agents');
      if (agents.find((a) => a.id === 'locked')?.credentials?.status === 'required') break;
      assert.ok(Date.now() < deadline, 'the probe of locked did not record its credentials');
      await new Promise((r) => setTimeout(r, 100));
    }
    const page = await browser.newPage();
    await page.goto(daemon.shellUrl);
    await page.getByTestId('new-session').click();
    const dialog = page.getByRole('dialog', { name: 'New session' });
    await dialog.waitFor(T);
    const option = dialog.locator('[data-testid=agent-option][data-agent-id=locked]');
    assert.match(await option.innerText(), /needs credentials/);
    await option.locator('input').check();
    const notice = dialog.getByTestId('agent-credentials');
    await notice.waitFor(T);
    assert.match(await notice.innerText(), /asked for credentials the last time it started/);
    assert.match(await notice.locator('[data-method-id=demo-login]').innerText(), new RegExp(HINT));
    await dialog.getByRole('textbox', { name: 'Working directory' }).fill(daemon.workspace);
    await shot(page, 'auth-new-session');

    await dialog.getByRole('button', { name: 'Start session' }).click();
    const error = dialog.getByTestId('create-error');
    await error.waitFor(T);
    assert.match(await error.innerText(), new RegExp(`session not created: .*needs credentials: ${HINT}`));
    assert.match(await error.locator('[data-method-id=demo-login]').innerText(), new RegExp(HINT));
    assert.ok(await dialog.isVisible(), 'the dialog stays open');
    const { sessions } = await daemon.api('GET', '/sessions');
    assert.equal(sessions.length, 0, 'nothing was created');
    const { tasks } = await daemon.api('GET', '/tasks');
    assert.equal(tasks.length, 0, 'no empty task either');
    await shot(page, 'auth-refused');
    await page.close();
  });

  test('the session shows the auth banner with the message, the methods and Try again', { timeout: 60_000 }, async () => {
    const s = await daemon.api('POST', '/session', { agentProfileId: 'gated', cwd: daemon.workspace });
    assert.ok(s.id, `gated was created: ${JSON.stringify(s)}`);
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
    // The refused create and resume are 409s the browser reports as failed loads.
    assert.deepEqual(appProblems(browser.problems).filter((p) => !/409/.test(p.text)), []);
  });
});
