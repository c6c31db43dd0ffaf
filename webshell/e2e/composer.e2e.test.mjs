// The composer's agent-facing controls in Chromium against the real daemon
// and demo agent: the mode and config option pickers (the agent reports the
// choice back), the slash-command list, and a prompt queued by another
// client, listed under the conversation and withdrawn from the page.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { appProblems, Daemon, launchBrowser, shot } from './harness.mjs';

const T = { timeout: 20_000 };

let daemon;
let browser;
let page;
let pane;
let sid;

before(async () => {
  daemon = await Daemon.start();
  browser = await launchBrowser();
  const s = await daemon.api('POST', '/session', { agentProfileId: 'demo', cwd: daemon.workspace });
  sid = s.id;
  page = await browser.newPage();
  await page.goto(daemon.shellUrl);
  const row = page.locator(`[data-testid=session-row][data-session-id="${sid}"] .srow__open`);
  await row.waitFor(T);
  await row.click();
  pane = page.locator(`[data-testid=pane][data-session-id="${sid}"]`);
});

after(async () => {
  await browser?.close();
  await daemon?.stop();
});

const box = () => pane.getByRole('textbox', { name: 'Message' });

async function send(text) {
  await box().click();
  await box().fill(text);
  await box().press('Enter');
}

describe('Web Shell composer: modes, options, slash commands, queued prompts', { concurrency: false }, () => {
  test('the mode and model pickers change what the agent runs with', { timeout: 60_000 }, async () => {
    const mode = pane.getByTestId('mode-picker');
    await mode.waitFor(T);
    await mode.selectOption('plan');
    await pane.getByTestId('config-model').selectOption('demo-smart');
    await send('/options');
    await pane.locator('[data-testid=agent-message]', { hasText: 'mode=plan model=demo-smart' }).waitFor(T);
    const ctx = await daemon.api('GET', `/session/${sid}/context`);
    assert.equal(ctx.currentMode, 'plan');
    await shot(page, 'composer-options');
  });

  test('typing "/" offers the agent commands; Tab completes, Enter on a full command sends it', { timeout: 60_000 }, async () => {
    await box().click();
    await box().fill('/');
    const menu = pane.getByTestId('slash-menu');
    await menu.waitFor(T);
    assert.ok((await menu.getByRole('option').count()) > 5, 'the demo agent announces its commands');
    await box().fill('/ech');
    await box().press('Tab');
    assert.equal(await box().inputValue(), '/echo ');
    await box().pressSequentially('from the menu');
    await box().press('Enter');
    await pane.locator('[data-testid=agent-message]', { hasText: 'from the menu' }).waitFor(T);
  });

  test('a prompt another client queued is listed and withdrawn from the page', { timeout: 60_000 }, async () => {
    await daemon.api('POST', `/session/${sid}/prompt`, { promptId: 'slow', prompt: [{ type: 'text', text: '/sleep 4000' }] });
    await daemon.api('POST', `/session/${sid}/prompt`, { promptId: 'later', prompt: [{ type: 'text', text: '/echo never sent' }] });
    const item = pane.locator('.queued [data-prompt-id=later]');
    await item.waitFor(T);
    assert.match(await item.innerText(), /never sent/);
    await item.getByRole('button', { name: 'Withdraw' }).click();
    await item.waitFor({ state: 'detached', ...T });
    const turn = await daemon.api('GET', `/session/${sid}/turns/later`);
    assert.equal(turn.state, 'cancelled');
    assert.equal(turn.stopReason, 'withdrawn');
    await daemon.waitTurn(sid, (t) => t.turns.find((x) => x.promptId === 'slow')?.state === 'completed');
    const t = await daemon.api('GET', `/session/${sid}/transcript`);
    assert.ok(!t.messages.some((m) => m.text?.includes('never sent') && m.role === 'agent'), 'the withdrawn prompt never reached the agent');
  });

  test('no console errors from the app', () => {
    assert.deepEqual(appProblems(browser.problems), []);
  });
});
