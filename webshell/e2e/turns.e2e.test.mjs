// Turns and the New-session dialog in Chromium against the real daemon and
// demo agent (issue 34, items 2 and 4): Esc stops the running turn and keeps
// the prompts queued behind it, each "Queued · Withdraw"; "End session"
// asks first; "Changes in this turn" only under a turn that changed files;
// a finished plan is not left pinned; the dialog lists the agent that can
// run first, folds the others, offers earlier directories and says what is
// wrong with a path under its field.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { appProblems, Daemon, launchBrowser, shot } from './harness.mjs';

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

async function openNew() {
  const s = await daemon.api('POST', '/session', { agentProfileId: 'demo', cwd: daemon.workspace });
  await page.goto(daemon.shellUrl);
  const row = page.locator(`[data-testid=session-row][data-session-id="${s.id}"] .srow__open`);
  await row.waitFor(T);
  await row.click();
  const pane = page.locator(`[data-testid=pane][data-session-id="${s.id}"]`);
  await pane.locator('[data-testid=connection][data-conn=open]').waitFor(T);
  await pane.locator('[data-testid=executor][data-exec=ready]').waitFor(T);
  return { id: s.id, pane };
}

async function send(pane, text) {
  const box = pane.getByRole('textbox', { name: 'Message' });
  await box.click();
  await box.fill(text);
  await box.press('Enter');
}

const turnsOf = async (id) => (await daemon.api('GET', `/session/${id}/transcript`)).turns;

describe('Web Shell turns', { concurrency: false }, () => {
  test('Esc stops the running turn only: the prompt queued behind it stays "Queued · Withdraw", and Withdraw takes it back', { timeout: 60_000 }, async () => {
    const { id, pane } = await openNew();
    await send(pane, '/hang');
    await pane.locator('[data-testid=agent-message]', { hasText: 'hanging…' }).waitFor(T);
    await send(pane, '/hang');
    await send(pane, '/echo never sent to the agent');
    // Both wait behind the running turn, each with its Withdraw.
    const queued = pane.getByTestId('queued');
    await page.waitForFunction((n) => document.querySelectorAll('[data-testid=queued]').length === n, 2, T);
    assert.deepEqual(await queued.allTextContents(), ['Queued · Withdraw', 'Queued · Withdraw']);
    const [first, , last] = (await turnsOf(id)).map((t) => t.promptId);

    await pane.getByRole('textbox', { name: 'Message' }).press('Escape');
    await daemon.waitTurn(id, (t) => t.turns.find((x) => x.promptId === first)?.state === 'cancelled');
    await pane.locator('[data-testid=turn-end][data-turn-state=cancelled]').waitFor(T);
    // The first queued prompt runs now; the last still waits, withdrawable.
    const t = await daemon.waitTurn(id, (x) => x.turns[1].state === 'running');
    assert.equal(t.turns[2].state, 'queued', JSON.stringify(t.turns));
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=queued]').length === 1, null, T);
    assert.equal(await pane.locator('[data-testid=pending-message]:has([data-testid=queued])').getAttribute('data-prompt-id'), last);
    assert.ok(
      await pane.evaluate((el) => {
        const end = el.querySelector('[data-testid=turn-end]');
        const follows = (x) => !!(end.compareDocumentPosition(x) & Node.DOCUMENT_POSITION_FOLLOWING);
        return follows(el.querySelectorAll('[data-testid=user-message]')[1]) && follows(el.querySelector('[data-testid=queued]'));
      }),
      'the prompt that runs now, and the one that waits, are shown below the cancelled turn',
    );
    assert.equal(await pane.getByTestId('cancel').textContent(), ' Cancel', 'the cancel is over; the next turn is not being cancelled');
    await shot(page, 'turns-01-queued-after-esc');

    await queued.getByRole('button', { name: 'Withdraw' }).click();
    await queued.waitFor({ state: 'detached', ...T });
    const gone = (await turnsOf(id)).find((x) => x.promptId === last);
    assert.equal(gone.state, 'cancelled');
    assert.equal(gone.stopReason, 'withdrawn');
    assert.equal(await pane.getByText('never sent to the agent').count(), 0, 'the withdrawn prompt is gone from the page');
    await pane.getByRole('textbox', { name: 'Message' }).press('Escape');
    await daemon.waitTurn(id, (x) => x.turns[1].state === 'cancelled');
    assert.deepEqual(appProblems(browser.problems), []);
  });

  test('"Changes in this turn" only under the turn that changed files; the finished plan is not left pinned', { timeout: 60_000 }, async () => {
    const { id, pane } = await openNew();
    await send(pane, 'hello');
    await pane.locator('[data-testid=agent-message]', { hasText: 'That is all a demo agent can do.' }).waitFor(T);
    // The plain reply plans, reads and answers: once its turn is over the
    // completed plan goes away.
    await daemon.waitTurn(id, (t) => t.turns[0]?.state === 'completed');
    await pane.getByTestId('plan').waitFor({ state: 'detached', ...T });

    await send(pane, '/tool write notes.txt written in the second turn');
    const [read, wrote] = (await daemon.waitTurn(id, (t) => t.turns[1]?.state === 'completed')).turns.map((x) => x.promptId);
    await pane.locator(`[data-testid=turn-end-changes][data-prompt-id="${wrote}"] [data-testid=turn-changes]`).waitFor(T);
    // The first turn only read a file: it is never offered (no request is even made for it).
    assert.equal(await pane.locator(`[data-prompt-id="${read}"] [data-testid=turn-changes]`).count(), 0);
    assert.equal(await pane.getByTestId('turn-changes').count(), 1);
    await pane.getByTestId('turn-changes').click();
    await pane.locator('[data-testid=ws-changes] [data-testid=ws-changed-file][data-path="notes.txt"]').waitFor(T);
    await shot(page, 'turns-02-changes-link');
  });

  test('"End session" asks first: Cancel keeps the session, the dialog\'s End session ends it', { timeout: 60_000 }, async () => {
    const { id, pane } = await openNew();
    await pane.getByTestId('end-session').click();
    const dialog = page.getByRole('alertdialog', { name: 'End this session?' });
    await dialog.waitFor(T);
    await shot(page, 'turns-03-end-session');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'detached', ...T });
    assert.equal((await daemon.api('GET', `/session/${id}`)).state, 'WAITING_FOR_INPUT');

    await pane.getByTestId('end-session').click();
    await dialog.getByRole('button', { name: 'End session' }).click();
    await pane.locator('[data-testid=session-state][data-state=COMPLETED]').waitFor(T);
    assert.equal((await daemon.api('GET', `/session/${id}`)).state, 'COMPLETED');
    assert.equal(await pane.getByTestId('session-state').textContent(), 'Ended');
  });
});

describe('Web Shell New-session dialog', { concurrency: false }, () => {
  test('the agent that can run first, the others folded with why; earlier directories; a bad path said under its field; opens at its top', { timeout: 60_000 }, async () => {
    await page.goto(daemon.shellUrl);
    await page.getByTestId('new-session').click();
    const dialog = page.getByRole('dialog', { name: 'New session' });
    await dialog.waitFor(T);
    assert.equal(await dialog.evaluate((el) => el.scrollTop), 0, 'the dialog opens at its top');
    const options = dialog.locator('[data-testid=agent-option]');
    assert.equal(await options.first().getAttribute('data-agent-id'), 'demo');
    assert.ok(await dialog.getByRole('radio', { name: /Demo agent/ }).isChecked());
    const fold = dialog.getByTestId('agents-unavailable');
    assert.match(await fold.locator('summary').textContent(), /^Unavailable here \(\d+\)$/);
    const hidden = fold.locator('[data-testid=agent-option]').first();
    assert.equal(await hidden.isVisible(), false, 'the unavailable agents are folded');
    await fold.locator('summary').click();
    await hidden.waitFor({ state: 'visible', ...T });
    assert.match(await hidden.textContent(), /Unavailable: .*not found on PATH/);

    // The earlier sessions' directory is offered and filled in.
    const cwd = dialog.getByRole('textbox', { name: 'Working directory' });
    assert.equal(await cwd.inputValue(), daemon.workspace);
    await dialog.getByTestId('recent-dirs').getByRole('button', { name: daemon.workspace }).waitFor(T);
    await shot(page, 'new-session-01');

    // Checked as typed, then by the daemon on submit.
    await cwd.fill('project');
    await dialog.locator('[data-testid=cwd-check][data-check=relative]').waitFor(T);
    assert.ok(await dialog.getByRole('button', { name: 'Start session' }).isDisabled());
    await cwd.fill(`${daemon.workspace}/does-not-exist`);
    await dialog.getByRole('button', { name: 'Start session' }).click();
    const check = dialog.locator('[data-testid=cwd-check][data-check=refused]');
    await check.waitFor(T);
    assert.match(await check.textContent(), /does-not-exist/);
    assert.equal(await cwd.getAttribute('aria-invalid'), 'true');
    assert.ok(await dialog.isVisible(), 'the dialog stays open');
    await shot(page, 'new-session-02-refused');

    await dialog.getByTestId('recent-dirs').getByRole('button', { name: daemon.workspace }).click();
    await dialog.getByRole('textbox', { name: 'First message (optional)' }).fill('/echo first words');
    await dialog.getByRole('button', { name: 'Start session' }).click();
    await dialog.waitFor({ state: 'detached', ...T });
    await page.locator('[data-testid=agent-message]', { hasText: 'first words' }).waitFor(T);
  });
});
