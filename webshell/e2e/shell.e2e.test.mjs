// The Web Shell against the real tetherd and demo agent in headless
// Chromium. Run with `node --test e2e/` after `make build` (the Makefile's
// test-web target does both). Screenshots go to e2e/artifacts/.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { appProblems, Daemon, launchBrowser, shot } from './harness.mjs';

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

/** Opens the shell from the printed URL (token in the fragment). */
async function openShell(page) {
  await page.goto(daemon.shellUrl);
  await page.getByRole('button', { name: /New session/ }).first().waitFor(T);
}

const paneOf = (page, sessionId) => page.locator(`[data-testid=pane][data-session-id="${sessionId}"]`);

async function waitConnected(pane) {
  await pane.locator('[data-testid=connection][data-conn=open]').waitFor(T);
}

/** Creates a session through the API and opens it from the sidebar. */
async function openNewSession(page, { title, prompts = [] } = {}) {
  const s = await daemon.api('POST', '/session', { agentProfileId: 'demo', cwd: daemon.workspace, ...(title ? { title } : {}) });
  for (const p of prompts) {
    const r = await daemon.api('POST', `/session/${s.id}/prompt`, { prompt: [{ type: 'text', text: p }] });
    await daemon.waitTurn(s.id, (t) => t.turns.some((x) => x.promptId === r.promptId && x.state !== 'running' && x.state !== 'queued'));
  }
  const row = page.locator(`[data-testid=session-row][data-session-id="${s.id}"] .srow__open`);
  await row.waitFor(T);
  await row.click();
  const pane = paneOf(page, s.id);
  await waitConnected(pane);
  return { id: s.id, pane };
}

async function send(pane, text) {
  const box = pane.getByRole('textbox', { name: 'Message' });
  await box.click();
  await box.fill(text);
  await box.press('Enter');
}

function userMessages(t) {
  return t.messages.filter((m) => m.role === 'user');
}

describe('Web Shell', { concurrency: false }, () => {
  let page;
  let chat; // the session created through the UI

  test('serves the shell, takes the token from the fragment and removes it from the URL', { timeout: 60_000 }, async () => {
    const root = await fetch(`${daemon.base}/`, { redirect: 'manual' });
    assert.equal(root.status, 302);
    assert.equal(root.headers.get('location'), '/shell/');
    const index = await fetch(`${daemon.base}/shell/`);
    assert.equal(index.status, 200, 'the shell is public');
    assert.match(index.headers.get('content-type'), /^text\/html/);
    assert.equal(index.headers.get('cache-control'), 'no-cache');
    const html = await index.text();
    const asset = html.match(/\/shell\/assets\/[^"]+\.js/)[0];
    const js = await fetch(`${daemon.base}${asset}`);
    assert.match(js.headers.get('content-type'), /^text\/javascript/);
    assert.match(js.headers.get('cache-control'), /immutable/);
    assert.equal((await fetch(`${daemon.base}/sessions`)).status, 401, 'the API still needs the token');

    page = await browser.newPage();
    await openShell(page);
    assert.equal(new URL(page.url()).hash, '', 'the token left the address bar');
    assert.equal(await page.evaluate(() => JSON.parse(localStorage.getItem('tether.token'))), daemon.token);
    // A reload without the fragment still works (the token is kept).
    await page.reload();
    await page.getByRole('button', { name: /New session/ }).first().waitFor(T);
  });

  test('create a session with the agent picker and chat with the demo agent', { timeout: 60_000 }, async () => {
    await page.getByTestId('new-session').click();
    const dialog = page.getByRole('dialog', { name: 'New session' });
    await dialog.waitFor(T);
    // Unavailable agents are listed greyed out with the reason.
    const unavailable = dialog.locator('[data-testid=agent-option].agent--unavailable');
    assert.ok((await unavailable.count()) > 0, 'agents not on PATH are listed');
    assert.match(await unavailable.first().textContent(), /Unavailable: .*not found on PATH/);
    assert.ok(await unavailable.first().locator('input').isDisabled());
    await dialog.getByRole('radio', { name: /Demo agent/ }).check();
    await dialog.getByRole('textbox', { name: 'Task title' }).fill('E2E demo task');
    await dialog.getByRole('textbox', { name: 'Working directory' }).fill(daemon.workspace);
    await shot(page, '01-new-session');
    await dialog.getByRole('button', { name: 'Start session' }).click();
    await dialog.waitFor({ state: 'detached', ...T });

    const pane = page.locator('[data-testid=pane]').first();
    chat = { id: await pane.getAttribute('data-session-id'), pane };
    await waitConnected(pane);
    await pane.locator('[data-testid=executor][data-exec=ready]').waitFor(T);
    // The task appears in the sidebar with its session, live.
    await page.locator('[data-testid=task]', { hasText: 'E2E demo task' }).locator(`[data-session-id="${chat.id}"]`).waitFor(T);

    await send(pane, 'hello there');
    await pane.locator('[data-testid=agent-message]', { hasText: 'You said: hello there.' }).waitFor(T);
    await pane.locator('[data-testid=agent-message]', { hasText: 'That is all a demo agent can do.' }).waitFor(T);
    await pane.locator('[data-testid=tool-call][data-tool-status=completed]', { hasText: 'Read README.md' }).waitFor(T);
    // The plan is done and its turn over: it is not left pinned.
    await pane.getByTestId('plan').waitFor({ state: 'detached', ...T });
    assert.equal(await pane.getByTestId('user-message').count(), 1);
    assert.equal(await pane.getByTestId('pending-message').count(), 0);
    // Shift+Enter inserts a newline instead of sending.
    const box = pane.getByRole('textbox', { name: 'Message' });
    await box.fill('line one');
    await box.press('Shift+Enter');
    await box.type('line two');
    assert.equal(await box.inputValue(), 'line one\nline two');
    await box.fill('');
    await shot(page, '02-chat');
  });

  test('a hanging turn is cancelled from the UI (Esc)', { timeout: 60_000 }, async () => {
    const { pane } = chat;
    await send(pane, '/hang');
    await pane.locator('[data-testid=agent-message]', { hasText: 'hanging…' }).waitFor(T);
    const cancel = pane.getByRole('button', { name: 'Cancel' });
    await cancel.waitFor(T);
    await shot(page, '03-streaming');
    await pane.getByRole('textbox', { name: 'Message' }).press('Escape');
    await pane.locator('[data-testid=turn-end][data-turn-state=cancelled]').waitFor(T);
    await cancel.waitFor({ state: 'detached', ...T });
    const t = await daemon.api('GET', `/session/${chat.id}/transcript`);
    assert.equal(t.turns.at(-1).state, 'cancelled');
    // The recovery banner does not offer anything after a user cancel.
    assert.equal(await pane.getByTestId('recovery-banner').count(), 0);
  });

  test('a permission request is granted from the UI', { timeout: 60_000 }, async () => {
    const { pane } = chat;
    await send(pane, '/permission');
    const perm = pane.getByTestId('permission');
    await perm.waitFor(T);
    assert.match(await perm.textContent(), /Edit demo\.txt/);
    await shot(page, '04-permission');
    await perm.getByRole('button', { name: 'Allow once' }).click();
    await pane.locator('[data-testid=agent-message]', { hasText: 'Permission outcome: selected allow_once' }).waitFor(T);
    await pane.getByTestId('permission-record').filter({ hasText: 'Allow once' }).waitFor(T);
    await perm.waitFor({ state: 'detached', ...T });
    const t = await daemon.waitTurn(chat.id, (x) => x.turns.at(-1).state === 'completed');
    assert.equal(t.toolCalls.find((c) => c.title === 'Edit demo.txt').status, 'completed');
  });

  test('kill -9 mid-turn, restart: the page reconnects, the banner appears, Continue completes the turn', { timeout: 60_000 }, async () => {
    const { pane, id } = chat;
    const usersBefore = userMessages(await daemon.api('GET', `/session/${id}/transcript`)).length;
    await send(pane, '/sleep 30000');
    await pane.locator('[data-testid=agent-message]', { hasText: 'sleeping 30000 ms' }).waitFor(T);
    await daemon.kill9();
    await pane.locator('[data-testid=connection][data-conn=disconnected]').waitFor(T);
    assert.equal(await pane.getByTestId('recovery-banner').count(), 0, 'no banner while disconnected');
    await shot(page, '05-disconnected');
    await daemon.restart();
    // Nobody touches the page: it reconnects by itself.
    await waitConnected(pane);
    const banner = pane.getByTestId('recovery-banner');
    await banner.waitFor(T);
    assert.equal(await banner.getAttribute('data-kind'), 'interrupted_turn');
    assert.match(await banner.textContent(), /interrupted while working/);
    await shot(page, '06-recovery-banner');

    const cont = banner.getByRole('button', { name: 'Continue the interrupted turn' });
    await cont.click();
    await pane.getByTestId('continued-divider').waitFor(T);
    // The demo agent answers the hidden continuation prompt; it is never shown.
    await pane.locator('[data-testid=agent-message]', { hasText: 'Continuing where I left off' }).waitFor(T);
    assert.equal(await pane.getByText('Your previous turn was interrupted').count(), 0, 'the continuation prompt stays hidden');
    await pane.locator('[data-testid=executor][data-exec=ready]').waitFor(T);
    await banner.waitFor({ state: 'detached', ...T });
    await shot(page, '07-continued');

    const t = await daemon.waitTurn(id, (x) => x.turns.at(-1).kind === 'continue' && x.turns.at(-1).state === 'completed');
    const users = userMessages(t);
    assert.equal(users.length, usersBefore + 1, 'the continuation added no user message');
    assert.equal(users.filter((m) => m.text === '/sleep 30000').length, 1, 'no duplicate user message');
    assert.equal(t.turns.filter((x) => x.kind === 'continue').length, 1);
    assert.equal(await pane.getByTestId('user-message').filter({ hasText: '/sleep 30000' }).count(), 1);
  });

  test('two tabs click Continue together: exactly one continuation', { timeout: 60_000 }, async (t) => {
    // An agent crash in a tool call interrupts the turn (no daemon restart).
    const s = await daemon.api('POST', '/session', { agentProfileId: 'demo', cwd: daemon.workspace, title: 'Two tabs' });
    const r = await daemon.api('POST', `/session/${s.id}/prompt`, { prompt: [{ type: 'text', text: '/crash-in-tool' }] });
    await daemon.waitTurn(s.id, (t) => t.turns.some((x) => x.promptId === r.promptId && x.state === 'interrupted'));

    const tabs = [await browser.context.newPage(), await browser.context.newPage()];
    t.after(() => Promise.all(tabs.map((x) => x.close())));
    const answers = [];
    for (const tab of tabs) {
      tab.on('response', (res) => {
        if (res.request().method() === 'POST' && res.url().endsWith(`/session/${s.id}/continue`)) answers.push(res.status());
      });
      await tab.goto(daemon.shellUrl);
      const row = tab.locator(`[data-testid=session-row][data-session-id="${s.id}"] .srow__open`);
      await row.click();
      const pane = paneOf(tab, s.id);
      await waitConnected(pane);
      const banner = pane.getByTestId('recovery-banner');
      await banner.waitFor(T);
      assert.match(await banner.getByTestId('banner-tools').textContent(), /Run crashing tool/, 'the interrupted tool call is named');
      await banner.getByRole('button', { name: 'Continue the interrupted turn' }).waitFor(T);
    }
    await shot(tabs[0], '08-two-tabs-before');
    // Both tabs click at the same instant (the same clock, one browser),
    // before either can hear of the other's continuation.
    const at = Date.now() + 400;
    await Promise.all(
      tabs.map((tab) =>
        tab.evaluate(
          (when) =>
            new Promise((res) =>
              setTimeout(() => {
                document.querySelector('[data-testid=continue]').click();
                res();
              }, Math.max(0, when - Date.now())),
            ),
          at,
        ),
      ),
    );
    const done = await daemon.waitTurn(s.id, (x) => x.turns.at(-1).kind === 'continue' && x.turns.at(-1).state === 'completed');
    // Give a second admission every chance to show up.
    await new Promise((res) => setTimeout(res, 500));
    const final = await daemon.api('GET', `/session/${s.id}/transcript`);
    assert.equal(final.turns.filter((x) => x.kind === 'continue').length, 1, 'exactly one continuation');
    assert.equal(userMessages(done).length, 1, 'no user message added by either tab');
    assert.deepEqual([...answers].sort(), [202, 409], 'both tabs asked; the daemon admitted one and declined the other');
    for (const tab of tabs) {
      const pane = paneOf(tab, s.id);
      await pane.getByTestId('continued-divider').waitFor(T);
      assert.equal(await pane.getByTestId('continued-divider').count(), 1);
      await pane.getByTestId('recovery-banner').waitFor({ state: 'detached', ...T });
    }
    await shot(tabs[1], '09-two-tabs-after');
  });

  test('switching sessions while a response is in flight leaves the new session untouched', { timeout: 60_000 }, async () => {
    const b = await openNewSession(page, { title: 'Session B', prompts: ['/echo I am B'] });
    await b.pane.locator('[data-testid=agent-message]', { hasText: 'I am B' }).waitFor(T);
    const a = await openNewSession(page, { title: 'Session A' });
    await send(a.pane, '/sleep 1500');
    await a.pane.locator('[data-testid=agent-message]', { hasText: 'sleeping 1500 ms' }).waitFor(T);
    // Switch the same pane to B while A is still answering.
    await page.locator(`[data-testid=session-row][data-session-id="${b.id}"] .srow__open`).click();
    const pane = page.locator('[data-testid=pane]').first();
    // The click switches the pane on the next render, not within click().
    await page.waitForFunction((id) => document.querySelector('[data-testid=pane]')?.getAttribute('data-session-id') === id, b.id, T);
    await pane.locator('[data-testid=agent-message]', { hasText: 'I am B' }).waitFor(T);
    const before = await pane.locator('.timeline').innerText();
    await daemon.waitTurn(a.id, (t) => t.turns.at(-1).state === 'completed');
    await new Promise((res) => setTimeout(res, 400));
    assert.equal(await pane.getAttribute('data-session-id'), b.id);
    assert.equal(await pane.locator('.timeline').innerText(), before, "A's reply did not reach B's pane");
    assert.doesNotMatch(before, /sleeping 1500/);
    assert.equal(await pane.getByRole('button', { name: 'Cancel' }).count(), 0, "A's running turn does not show in B");

    // A prompt sent right before switching: its response lands after the switch.
    await page.locator(`[data-testid=session-row][data-session-id="${a.id}"] .srow__open`).click();
    const paneA = paneOf(page, a.id);
    await waitConnected(paneA);
    await paneA.locator('[data-testid=agent-message]', { hasText: 'done' }).waitFor(T);
    await send(paneA, '/echo second reply for A');
    await page.locator(`[data-testid=session-row][data-session-id="${b.id}"] .srow__open`).click();
    await paneOf(page, b.id).waitFor(T);
    await daemon.waitTurn(a.id, (t) => t.messages.some((m) => m.text === 'second reply for A'));
    await new Promise((res) => setTimeout(res, 300));
    const textB = await paneOf(page, b.id).locator('.timeline').innerText();
    assert.doesNotMatch(textB, /second reply for A/);
    await shot(page, '10-switched');

    // Side by side: A opens beside B, each pane shows its own session.
    await page.locator(`[data-testid=session-row][data-session-id="${a.id}"]`).getByRole('button', { name: /Open .* beside/ }).click();
    await waitConnected(paneOf(page, a.id));
    assert.equal(await page.locator('[data-testid=pane]').count(), 2);
    await paneOf(page, a.id).locator('[data-testid=agent-message]', { hasText: 'second reply for A' }).waitFor(T);
    await shot(page, '11-side-by-side');
  });

  test('narrow window and Chinese', { timeout: 60_000 }, async () => {
    const narrow = await browser.context.newPage();
    await narrow.setViewportSize({ width: 420, height: 820 });
    await narrow.goto(daemon.shellUrl);
    await narrow.evaluate(() => localStorage.setItem('tether.settings', JSON.stringify({ lang: 'zh', autoResume: false })));
    await narrow.reload();
    await narrow.getByRole('button', { name: '显示或隐藏会话列表' }).waitFor(T);
    const pane = narrow.locator('[data-testid=pane]').first();
    await pane.waitFor(T);
    await pane.getByRole('textbox', { name: '消息' }).waitFor(T);
    const overflow = await narrow.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 1, `no horizontal page overflow (${overflow}px)`);
    await shot(narrow, '12-narrow-zh');
    await narrow.evaluate(() => localStorage.setItem('tether.settings', JSON.stringify({ lang: 'en', autoResume: false })));
    await narrow.close();
  });

  test('no console errors from the app', (t) => {
    const tolerated = browser.problems.length - appProblems(browser.problems).length;
    t.diagnostic(`browser network lines tolerated (daemon killed, 409 decline): ${tolerated}`);
    for (const p of new Set(browser.problems.map((x) => x.text.replace(/\d+/g, 'N')))) t.diagnostic(`  ${p}`);
    const problems = appProblems(browser.problems);
    assert.deepEqual(problems, []);
  });
});
