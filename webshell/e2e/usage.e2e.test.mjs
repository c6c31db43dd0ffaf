// Usage in the Web Shell (issue 33, item 4) in headless Chromium against
// the real tetherd and demo agent: `/usage 3` sends three usage_update
// notifications (context 1000·i of 200000, cost 0.01·i USD) and ends the
// turn with its tokens, which the daemon records as usage.updated. The
// pane's gauge follows them live (3k of 200k, 1.5 %, as a meter a screen
// reader reads), the cost says $0.03, the turn's end says its tokens and
// context window, and a reload shows the same from the session and its
// transcript. Checked against the API too.
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

async function send(pane, text) {
  const box = pane.getByRole('textbox', { name: 'Message' });
  await box.click();
  await box.fill(text);
  await box.press('Enter');
}

describe('Web Shell usage', { concurrency: false }, () => {
  test('the context gauge, the cost and the turn usage line after /usage 3', { timeout: 90_000 }, async (t) => {
    const s = await daemon.api('POST', '/session', { agentProfileId: 'demo', cwd: daemon.workspace, title: 'How much context' });
    const pane = await openSession(page, daemon, s.id);
    await pane.locator('[data-testid=executor][data-exec=ready]').waitFor(T);
    // No report yet: no gauge, no cost.
    assert.equal(await pane.getByTestId('usage').count(), 0);

    await send(pane, '/usage 3');
    const tr = await daemon.waitTurn(s.id, (x) => x.turns[0]?.state === 'completed' && x.turns[0]?.usage?.contextUsed === 3000);
    const promptId = tr.turns[0].promptId;
    // The turn's tokens, as the daemon recorded them (the demo agent's
    // prompt response: 100·N in, 10·N out, 5·N cached), then its window.
    const u = tr.turns[0].usage;
    const expected = [
      ...(u.inputTokens !== undefined ? [`${u.inputTokens} in`] : []),
      ...(u.outputTokens !== undefined ? [`${u.outputTokens} out`] : []),
      ...(u.cachedReadTokens ? [`${u.cachedReadTokens} cached`] : []),
      'context 3k / 200k',
    ].join(' · ');
    const api = await daemon.api('GET', `/session/${s.id}`);
    assert.deepEqual({ used: api.usage?.contextUsed, size: api.usage?.contextSize, cost: api.usage?.cost }, { used: 3000, size: 200000, cost: { amount: 0.03, currency: 'USD' } });

    const check = async () => {
      const gauge = pane.getByRole('meter', { name: 'Context window' });
      await pane.locator('[data-testid=context-gauge][aria-valuenow="3000"]').waitFor(T);
      assert.equal(await gauge.getAttribute('aria-valuemax'), '200000');
      assert.equal(await gauge.getAttribute('aria-valuetext'), '3k of 200k tokens used (1.5%)');
      assert.match(await gauge.textContent(), /3k \/ 200k tokens · 1\.5%/);
      assert.match(await pane.getByTestId('usage-cost').textContent(), /\$0\.03/);
      const line = pane.locator(`[data-prompt-id="${promptId}"] [data-testid=turn-usage]`);
      await line.waitFor(T);
      assert.equal(await line.textContent(), expected);
    };
    await check();
    await shot(page, 'usage-01-gauge');
    assert.deepEqual(await scan(t, page, 'a pane with its usage'), []);

    // A reload starts from GET /session/{id} and the transcript's turns.
    await page.reload();
    await pane.locator('[data-testid=connection][data-conn=open]').waitFor(T);
    await check();
    assert.deepEqual(appProblems(browser.problems), []);
  });
});
