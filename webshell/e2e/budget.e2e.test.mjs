// Budgets and the stall watchdog in the Web Shell (issue 33, item 5) in
// headless Chromium against the real tetherd and demo agent. A session
// with a budget of 1000 tokens runs `/loop 0 10` (120 tokens a step, until
// stopped): the budget stops it, the transcript says "Stopped: budget
// reached", the pane's budget meter is red and the inbox lists it; its
// Continue is refused while over (the 409's words under the item); "Raise
// budget" opens the session's budget editor, which shows the daemon's 400
// and then PATCHes a higher budget; Continue from the inbox then runs the
// continuation to its end. A session with stallSeconds 1 runs `/wait` (an
// agent that never answers): the pane says how long the agent has been
// silent, the inbox lists the stalled turn, and either Cancel stops it.
// Each step is checked against the API too.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { scan } from './axe.mjs';
import { appProblems, Daemon, launchBrowser, openSession, shot } from './harness.mjs';

const T = { timeout: 20_000 };

let daemon;
let browser;
let page;

before(async () => {
  daemon = await Daemon.start();
  browser = await launchBrowser({ width: 1280, height: 800 });
  page = await browser.newPage();
});

after(async () => {
  await browser?.close();
  await daemon?.stop();
});

const newSession = (title, budget) => daemon.api('POST', '/session', { agentProfileId: 'demo', cwd: daemon.workspace, title, budget });
const lastTurn = (id, pred) => daemon.waitTurn(id, (t) => !!t.turns.at(-1) && pred(t.turns.at(-1)), 30_000);
const itemOf = (inbox, kind, sessionId) => inbox.locator(`[data-testid=inbox-item][data-kind=${kind}][data-session-id="${sessionId}"]`);

async function send(pane, text) {
  const box = pane.getByRole('textbox', { name: 'Message' });
  await box.click();
  await box.fill(text);
  await box.press('Enter');
}

async function openInbox() {
  await page.getByTestId('inbox-button').click();
  const inbox = page.getByRole('dialog', { name: 'Inbox' });
  await inbox.waitFor(T);
  return inbox;
}

describe('Web Shell budgets', { concurrency: false }, () => {
  test('a token budget stops a looping turn; raised in the editor, the turn continues from the inbox', { timeout: 120_000 }, async (t) => {
    const s = await newSession('Loops until its budget', { maxTokens: 1000 });
    assert.deepEqual(s.budget, { maxTokens: 1000 });
    const pane = await openSession(page, daemon, s.id);
    await pane.locator('[data-testid=executor][data-exec=ready]').waitFor(T);
    const meter = pane.getByRole('meter', { name: 'Token budget' });
    assert.equal(await meter.getAttribute('aria-valuemax'), '1000');

    await send(pane, '/loop 0 10');
    const stopped = await lastTurn(s.id, (x) => x.state === 'cancelled');
    const turn = stopped.turns.at(-1);
    assert.equal(turn.error?.code, 'budget_exceeded');
    assert.match(turn.error.message, /^the session used \d+ tokens of its budget of 1000$/);

    // The transcript says why it stopped, not that it failed; the meter is red.
    const line = pane.locator(`[data-testid=turn-end][data-prompt-id="${turn.promptId}"]`);
    await line.waitFor(T);
    assert.equal(await line.getAttribute('data-stopped-by'), 'budget');
    // Then what the turn used, as every ended turn says it.
    assert.ok((await line.textContent()).startsWith(`Stopped: budget reached — ${turn.error.message} · `), await line.textContent());
    await pane.locator('[data-testid=budget-tokens][data-level=full]').waitFor(T);
    assert.match(await meter.getAttribute('aria-valuetext'), /^[\d,]+ of 1,000 tokens used \(\d+%\)$/);
    await pane.getByTestId('banner-raise-budget').waitFor(T);

    // The inbox: its badge, the item with the daemon's words.
    await page.getByRole('button', { name: 'Inbox, 1 waiting' }).waitFor(T);
    const inbox = await openInbox();
    const item = itemOf(inbox, 'budget_exceeded', s.id);
    await item.waitFor(T);
    assert.equal(await item.getAttribute('aria-label'), 'Budget reached: Loops until its budget');
    assert.equal(await item.getByTestId('inbox-what').textContent(), `Budget reached: ${turn.error.message}. Raise the budget, then continue.`);
    await shot(page, 'budget-01-inbox');
    assert.deepEqual(await scan(t, page, 'the inbox with a turn a budget stopped'), []);

    // Still over: the continuation is refused, in the daemon's words.
    await item.getByRole('button', { name: 'Continue the stopped turn of Loops until its budget' }).click();
    const refused = item.getByRole('alert');
    await refused.waitFor(T);
    assert.equal(await refused.textContent(), 'Could not do it: the session is still over its budget; raise it, then continue');

    // Raise budget: the session's pane with its editor open.
    await item.getByRole('button', { name: 'Raise budget for Loops until its budget' }).click();
    await inbox.waitFor({ state: 'detached', ...T });
    const editor = pane.getByRole('form', { name: 'Budget of this session' });
    await editor.waitFor(T);
    const tokens = editor.getByLabel('Max tokens');
    assert.equal(await tokens.inputValue(), '1000');
    await page.waitForFunction(() => document.activeElement?.dataset?.testid === 'budget-input-tokens', null, T);

    await tokens.fill('100000');
    await editor.getByLabel('Report silence after (seconds)').fill('30');
    await shot(page, 'budget-02-editor');
    assert.deepEqual(await scan(t, page, 'the budget editor'), []);

    // The daemon's 400 shows in the editor, which stays open.
    const cost = editor.getByLabel('Max cost (USD)');
    await cost.fill('0');
    await editor.getByRole('button', { name: 'Save budget' }).click();
    const problem = editor.getByRole('alert');
    await problem.waitFor(T);
    assert.equal(await problem.textContent(), "Could not save the budget: a budget's maxCost needs an amount above 0 and a three-letter currency");
    assert.deepEqual((await daemon.api('GET', `/session/${s.id}`)).budget, { maxTokens: 1000 });

    await cost.fill('');
    await editor.getByRole('button', { name: 'Save budget' }).click();
    await editor.waitFor({ state: 'detached', ...T });
    await pane.locator('[data-testid=budget-tokens][aria-valuemax="100000"]').waitFor(T);
    assert.deepEqual((await daemon.api('GET', `/session/${s.id}`)).budget, { maxTokens: 100000, stallSeconds: 30 });
    // The pane's banner offers Continue now; the inbox's is used.
    await pane.getByTestId('continue').waitFor(T);

    const again = await openInbox();
    const still = itemOf(again, 'budget_exceeded', s.id);
    await still.getByRole('button', { name: 'Continue the stopped turn of Loops until its budget' }).click();
    await still.waitFor({ state: 'detached', ...T });
    const done = await lastTurn(s.id, (x) => x.kind === 'continue' && x.state === 'completed');
    assert.equal(done.turns.at(-1).continuesPromptId, turn.promptId);
    await page.keyboard.press('Escape');
    await again.waitFor({ state: 'detached', ...T });
    await pane.getByTestId('continued-divider').waitFor(T);
    await pane.locator(`[data-testid=agent-message][data-prompt-id="${done.turns.at(-1).promptId}"]`).waitFor(T);
    await page.getByRole('button', { name: 'Inbox, nothing waiting' }).waitFor(T);
    await shot(page, 'budget-03-continued');
    assert.deepEqual(appProblems(browser.problems), []);
  });

  test('a silent agent: the stalled notice and the inbox item, each with its Cancel', { timeout: 120_000 }, async (t) => {
    const s = await newSession('Waits forever', { stallSeconds: 1 });
    const pane = await openSession(page, daemon, s.id);
    await pane.locator('[data-testid=executor][data-exec=ready]').waitFor(T);

    // The trailing space: "/wait" alone would pick the command in the slash menu.
    await send(pane, '/wait ');
    const notice = pane.getByTestId('stall-notice');
    await notice.waitFor(T);
    assert.match(await pane.getByTestId('stall-silent').textContent(), /^No output from the agent for \d+ sec$/);
    const stalled = await lastTurn(s.id, (x) => x.state === 'running' && !!x.stalledAt);
    const promptId = stalled.turns.at(-1).promptId;
    assert.equal(await notice.getAttribute('data-prompt-id'), promptId);

    await page.getByRole('button', { name: /^Inbox, \d+ waiting$/ }).waitFor(T);
    const inbox = await openInbox();
    const item = itemOf(inbox, 'stalled_turn', s.id);
    await item.waitFor(T);
    assert.match(await item.getByTestId('inbox-what').textContent(), /^No output from the agent for \d+ sec$/);
    const api = await daemon.api('GET', '/inbox');
    const listed = api.items.find((i) => i.session.id === s.id);
    assert.deepEqual([listed?.kind, listed?.turn?.promptId], ['stalled_turn', promptId]);
    await shot(page, 'budget-04-stalled');
    assert.deepEqual(await scan(t, page, 'the inbox with a stalled turn'), []);

    // Cancel from the inbox: the turn ends, the item and the notice go.
    await item.getByRole('button', { name: 'Cancel turn of Waits forever' }).click();
    await item.waitFor({ state: 'detached', ...T });
    await lastTurn(s.id, (x) => x.promptId === promptId && x.state === 'cancelled');
    await page.keyboard.press('Escape');
    await inbox.waitFor({ state: 'detached', ...T });
    await notice.waitFor({ state: 'detached', ...T });

    // Again, cancelled from the pane's notice this time.
    await send(pane, '/wait ');
    await notice.waitFor(T);
    assert.deepEqual(await scan(t, page, 'a pane with a stalled turn'), []);
    await notice.getByRole('button', { name: 'Cancel turn' }).click();
    await lastTurn(s.id, (x) => x.promptId !== promptId && x.state === 'cancelled');
    await notice.waitFor({ state: 'detached', ...T });
    await page.getByRole('button', { name: 'Inbox, nothing waiting' }).waitFor(T);
    assert.deepEqual(appProblems(browser.problems), []);
  });
});
