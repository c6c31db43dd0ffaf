// The inbox and its notifications (issue 33, items 1 and 3; docs/inbox.md)
// in headless Chromium against the real tetherd and demo agent: a turn that
// asks for permission shows in the badge's count, the inbox answers it in
// place and the turn completes; a failed turn (/error) and an interrupted
// one (/crash) appear while the inbox is open, kept live by the global
// stream, and the interrupted one is continued from there. With the
// notifications turned on and the page hidden, a permission request shows
// a browser notification whose click opens the session. Each step is
// checked against the API too.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { scan } from './axe.mjs';
import { appProblems, Daemon, launchBrowser, shot } from './harness.mjs';

const T = { timeout: 20_000 };

let daemon;
let browser;
let page;

before(async () => {
  daemon = await Daemon.start();
  browser = await launchBrowser({ width: 1280, height: 800 });
  await browser.context.grantPermissions(['notifications'], { origin: daemon.base });
  // A notification of a headless browser is seen by nobody: the page's
  // Notification is the browser's own, observed (each one made is kept for
  // the test). And the page says it is hidden when the test says so: a
  // headless page is always visible.
  await browser.context.addInitScript(() => {
    window.__notes = [];
    const Real = window.Notification;
    if (Real) {
      window.Notification = class extends Real {
        constructor(title, opts) {
          super(title, opts);
          window.__notes.push(this);
        }
      };
    }
    window.__hidden = false;
    Object.defineProperty(Document.prototype, 'visibilityState', { configurable: true, get: () => (window.__hidden ? 'hidden' : 'visible') });
    Object.defineProperty(Document.prototype, 'hidden', { configurable: true, get: () => window.__hidden });
  });
  page = await browser.newPage();
});

after(async () => {
  await browser?.close();
  await daemon?.stop();
});

const prompt = (id, text) => daemon.api('POST', `/session/${id}/prompt`, { prompt: [{ type: 'text', text }] });
const newSession = (title) => daemon.api('POST', '/session', { agentProfileId: 'demo', cwd: daemon.workspace, title });
const pendingPermission = (id) => daemon.waitTurn(id, (t) => t.pendingPermissions.length > 0);
const lastTurnIs = (id, state) => daemon.waitTurn(id, (t) => t.turns.at(-1)?.state === state);
const paneOf = (id) => page.locator(`[data-testid=pane][data-session-id="${id}"]`);
const itemOf = (inbox, kind, sessionId) => inbox.locator(`[data-testid=inbox-item][data-kind=${kind}][data-session-id="${sessionId}"]`);

async function setHidden(hidden) {
  await page.evaluate((h) => {
    window.__hidden = h;
    document.dispatchEvent(new Event('visibilitychange'));
  }, hidden);
}

async function openSessionRow(id) {
  await page.locator(`.tasks__list [data-testid=session-row][data-session-id="${id}"] .srow__open`).click();
  await paneOf(id).locator('[data-testid=connection][data-conn=open]').waitFor(T);
}

describe('the inbox', { concurrency: false }, () => {
  test('a permission in the badge, answered from the inbox; the turn completes', { timeout: 90_000 }, async (t) => {
    const a = await newSession('Needs a permission');
    await prompt(a.id, '/permission');
    await pendingPermission(a.id);

    await page.goto(daemon.shellUrl);
    const button = page.getByRole('button', { name: 'Inbox, 1 waiting' });
    await button.waitFor(T);
    assert.equal(await page.getByTestId('inbox-button').getByTestId('inbox-count').textContent(), '1');
    await openSessionRow(a.id);
    await paneOf(a.id).getByTestId('permission').waitFor(T);
    await shot(page, 'inbox-01-badge');

    await button.click();
    const inbox = page.getByRole('dialog', { name: 'Inbox' });
    await inbox.waitFor(T);
    const item = itemOf(inbox, 'permission', a.id);
    await item.waitFor(T);
    assert.match(await item.getAttribute('aria-label'), /^Permission: Needs a permission$/);
    assert.equal(await item.getByTestId('inbox-what').textContent(), 'Edit demo.txt');
    const primary = item.locator('[data-primary=true]');
    assert.equal(await primary.getAttribute('data-option-kind'), 'allow_once');
    await shot(page, 'inbox-02-open');
    assert.deepEqual(await scan(t, page, 'the inbox'), []);

    await primary.click();
    await item.waitFor({ state: 'detached', ...T });
    await inbox.getByTestId('inbox-empty').waitFor(T);
    await page.getByRole('button', { name: 'Inbox, nothing waiting' }).waitFor(T);
    const tr = await lastTurnIs(a.id, 'completed');
    assert.equal(tr.pendingPermissions.length, 0);
    const inboxNow = await daemon.api('GET', '/inbox');
    assert.deepEqual(inboxNow.items, []);
    await page.keyboard.press('Escape');
    await inbox.waitFor({ state: 'detached', ...T });
    // The pane saw the answer and the end of the turn.
    await paneOf(a.id).getByText('edited demo.txt (simulated)').waitFor(T);
    assert.equal(await paneOf(a.id).getByTestId('permission').count(), 0);
  });

  test('failed and interrupted turns appear while the inbox is open; Continue and Open from it', { timeout: 90_000 }, async (t) => {
    const b = await newSession('Overloaded model');
    const c = await newSession('Crashing agent');
    await page.getByTestId('inbox-button').click();
    const inbox = page.getByRole('dialog', { name: 'Inbox' });
    await inbox.getByTestId('inbox-empty').waitFor(T);

    await prompt(b.id, '/error -32603 model overloaded');
    await prompt(c.id, '/crash');
    await lastTurnIs(b.id, 'failed');
    await lastTurnIs(c.id, 'interrupted');
    const failed = itemOf(inbox, 'failed_turn', b.id);
    const interrupted = itemOf(inbox, 'interrupted_turn', c.id);
    await failed.waitFor(T);
    await interrupted.waitFor(T);
    assert.match(await failed.getByTestId('inbox-what').textContent(), /^The turn failed: .*model overloaded/);
    assert.match(await interrupted.getByTestId('inbox-what').textContent(), /^The turn was interrupted \(.+\)\.$/);
    assert.equal(await failed.getByTestId('inbox-continue').count(), 0);
    // Newest first, as the daemon lists them.
    const order = await inbox.getByTestId('inbox-item').evaluateAll((els) => els.map((e) => e.dataset.sessionId));
    const api = await daemon.api('GET', '/inbox');
    assert.deepEqual(order, api.items.map((i) => i.session.id));
    await page.getByRole('button', { name: 'Inbox, 2 waiting' }).waitFor(T);
    await shot(page, 'inbox-04-turns');
    assert.deepEqual(await scan(t, page, 'the inbox with failed and interrupted turns'), []);

    // Continue from the inbox: the interrupted turn leaves, a continuation runs.
    await interrupted.getByRole('button', { name: 'Continue the interrupted turn of Crashing agent' }).click();
    await interrupted.waitFor({ state: 'detached', ...T });
    const tc = await daemon.waitTurn(c.id, (x) => x.turns.at(-1)?.kind === 'continue');
    assert.equal(tc.turns.at(-1).continuesPromptId, tc.turns.at(-2).promptId);

    // Open: the session shows in the active pane, the inbox closes.
    await failed.getByRole('button', { name: 'Open Overloaded model' }).click();
    await inbox.waitFor({ state: 'detached', ...T });
    await paneOf(b.id).locator('[data-testid=connection][data-conn=open]').waitFor(T);
  });

  test('with notifications on, a permission asked while the page is hidden shows one; its click opens the session', { timeout: 90_000 }, async () => {
    const a = await newSession('Asks while you are away');
    await page.getByTestId('inbox-button').click();
    const inbox = page.getByRole('dialog', { name: 'Inbox' });
    const toggle = inbox.getByRole('checkbox', { name: 'Notify me when the tab is hidden' });
    assert.equal(await toggle.isChecked(), false);
    await toggle.check();
    await page.waitForFunction(() => localStorage.getItem('tether.notify') === 'true', null, T);
    assert.equal(await page.evaluate(() => Notification.permission), 'granted');
    await page.keyboard.press('Escape');
    await inbox.waitFor({ state: 'detached', ...T });

    // Seen: no notification.
    await prompt(a.id, '/echo while you watch');
    await lastTurnIs(a.id, 'completed');
    await page.getByRole('button', { name: /^Inbox, / }).waitFor(T);
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(await page.evaluate(() => window.__notes.length), 0);

    await setHidden(true);
    await prompt(a.id, '/permission');
    const tr = await pendingPermission(a.id);
    const requestId = tr.pendingPermissions[0].id;
    await page.waitForFunction(() => window.__notes.some((n) => n.tag.startsWith('permission:')), null, T);
    const notes = await page.evaluate(() => window.__notes.map((n) => ({ title: n.title, body: n.body, tag: n.tag })));
    const note = notes.find((n) => n.tag.startsWith('permission:'));
    assert.deepEqual(note, { title: 'Asks while you are away asks for permission', body: 'Edit demo.txt', tag: `permission:${a.id}:${requestId}` });
    // The echo turn ended while the page was seen: it made none.
    assert.equal(notes.filter((n) => n.tag === `turn:${a.id}`).length, 0);

    // Back to the page by the notification: its session opens.
    await setHidden(false);
    assert.equal(await paneOf(a.id).count(), 0);
    await page.evaluate(() => window.__notes.find((n) => n.tag.startsWith('permission:')).dispatchEvent(new Event('click')));
    await paneOf(a.id).getByTestId('permission').waitFor(T);
    await shot(page, 'inbox-03-notification');

    // Hidden again: the end of the turn notifies under the session's tag.
    await setHidden(true);
    await paneOf(a.id).getByTestId('permission').locator('[data-primary=true]').click();
    await lastTurnIs(a.id, 'completed');
    await page.waitForFunction((tag) => window.__notes.some((n) => n.tag === tag), `turn:${a.id}`, T);
    assert.equal(await page.evaluate((tag) => window.__notes.find((n) => n.tag === tag).title, `turn:${a.id}`), 'Asks while you are away: the turn is done');
    await setHidden(false);
    assert.deepEqual(appProblems(browser.problems), []);
  });
});
