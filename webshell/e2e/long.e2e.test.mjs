// A long session in the Web Shell (issue 34, item 7): 10,000 messages open
// on their latest turn, only a window of the timeline is drawn, and
// scrolling up draws earlier items without moving what the reader sees.
// The time to the first paint of the latest message is reported (as a test
// diagnostic: a figure, not an assertion; docs/benchmarks.md).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { appProblems, Daemon, launchBrowser, shot } from './harness.mjs';

const T = { timeout: 60_000 };
const N = 10_000;

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

describe('a long session', () => {
  test(`${N} messages open on the latest, drawn a window at a time`, async (t) => {
    const s = await daemon.api('POST', '/session', {
      agentProfileId: 'demo',
      cwd: daemon.workspace,
      initialPrompt: [{ type: 'text', text: `/flood ${N} messages` }],
    });
    const tr = await daemon.waitTurn(s.id, (x) => x.turns.length > 0 && x.turns.every((u) => u.state !== 'running' && u.state !== 'queued'), 120_000);
    assert.equal(tr.messages.filter((m) => m.role === 'agent').length, N);

    const page = await browser.newPage();
    await page.setViewportSize({ width: 1280, height: 800 });
    const started = Date.now();
    await page.goto(daemon.shellUrl);
    await page.locator(`[data-testid=session-row][data-session-id="${s.id}"] .srow__open`).click(T);
    const pane = page.locator(`[data-testid=pane][data-session-id="${s.id}"]`);
    const latest = pane.locator('[data-testid=agent-message]', { hasText: `chunk ${N}` });
    await latest.waitFor(T);
    const firstPaint = Date.now() - started;
    t.diagnostic(`first paint of the latest message of ${N}: ${firstPaint} ms (from navigation, sidebar click included)`);
    assert.ok(await latest.isVisible(), 'the latest message is in view');

    // Only a window is drawn; earlier items come as the reader scrolls up.
    const drawn = await pane.locator('[data-testid=agent-message]').count();
    assert.ok(drawn < 1000, `drawn ${drawn} of ${N} messages, want a window`);
    await pane.getByTestId('show-earlier').waitFor(T);
    const firstText = await pane.locator('[data-testid=agent-message]').first().innerText();
    // The reader scrolls to the top of what is drawn: the earlier window is
    // drawn above, and what they were reading stays in view.
    await pane.locator('.timeline').evaluate((el) => {
      el.scrollTop = 0;
    });
    await pane.locator('[data-testid=agent-message]').nth(drawn).waitFor(T);
    const now = await pane.locator('[data-testid=agent-message]').count();
    const oldFirst = pane.locator('[data-testid=agent-message]').nth(now - drawn);
    assert.equal(await oldFirst.innerText(), firstText);
    const read = await oldFirst.boundingBox();
    const view = await pane.locator('.timeline').boundingBox();
    assert.ok(read && view && read.y >= view.y - 1 && read.y < view.y + view.height, `the message read before stays in view: ${JSON.stringify(read)} in ${JSON.stringify(view)}`);
    await shot(page, 'long-session');
    assert.deepEqual(appProblems(browser.problems), []);
  });
});
