// Transcript pages in the Web Shell (issue 36), in headless Chromium
// against the real tetherd and demo agent. A session of 60 turns (more
// than the pane's page of 50) opens on its latest page only: its first
// turns are not in the page at all. Scrolling to the top reads the page
// before and puts it above, in order and once each, while what the reader
// was looking at stays where it was; the start of the session is marked.
// A new prompt's reply still streams in at the bottom. After a reload
// (the latest page again), "Show earlier turns" reads the earlier turns
// from the keyboard, and the reader at the bottom stays there.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { scan } from './axe.mjs';
import { appProblems, Daemon, launchBrowser, openSession, shot } from './harness.mjs';

const T = { timeout: 20_000 };
const TURNS = 60;
const PAGE = 50; // the pane's page of turns (TRANSCRIPT_PAGE_TURNS)

let daemon;
let browser;
let page;
let sid;
/** The transcript reads the page made, as their query strings. */
const reads = [];

const pid = (n) => `turn-${String(n).padStart(2, '0')}`;

before(async () => {
  daemon = await Daemon.start();
  browser = await launchBrowser({ width: 1280, height: 800 });
  const s = await daemon.api('POST', '/session', { agentProfileId: 'demo', cwd: daemon.workspace, title: 'Sixty turns' });
  sid = s.id;
  // Queued behind each other, run in turn: quicker than one at a time.
  // The daemon holds 16 queued prompts a session: a full queue is waited on.
  for (let n = 1; n <= TURNS; ) {
    try {
      await daemon.api('POST', `/session/${sid}/prompt`, { promptId: pid(n), prompt: [{ type: 'text', text: `/echo reply ${n}` }] });
      n++;
    } catch (e) {
      if (!/prompt_queue_full/.test(String(e))) throw e;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  await daemon.waitTurn(sid, (t) => t.turns.length === TURNS && t.turns.every((u) => u.state === 'completed'), 120_000);
  page = await browser.newPage();
  page.on('request', (r) => {
    const u = new URL(r.url());
    if (u.pathname === `/session/${sid}/transcript`) reads.push(u.search);
  });
});

after(async () => {
  await browser?.close();
  await daemon?.stop();
});

/** The promptIds of the user messages drawn, top to bottom. */
const drawnTurns = (pane) => pane.locator('[data-testid=user-message]').evaluateAll((els) => els.map((e) => e.getAttribute('data-prompt-id')));
/** The replies drawn, top to bottom. */
const drawnReplies = (pane) => pane.locator('[data-testid=agent-message]').evaluateAll((els) => els.map((e) => e.textContent.trim()));

describe('Web Shell transcript pages', { concurrency: false }, () => {
  test(`a ${TURNS}-turn session opens on its latest ${PAGE}; scrolling to the top reads the earlier turns in place`, { timeout: 120_000 }, async (t) => {
    const pane = await openSession(page, daemon, sid);
    const latest = pane.locator(`[data-testid=agent-message][data-prompt-id="${pid(TURNS)}"]`);
    await latest.waitFor(T);
    assert.ok(await latest.isVisible(), 'the latest reply is in view');

    // The latest page read, nothing older; the first turns are not in the page.
    assert.ok(reads.length > 0 && reads.every((q) => q === `?limit=${PAGE}`), reads.join(' '));
    const opened = reads.length;
    const first = await drawnTurns(pane);
    assert.ok(first.length > 0 && first.length <= PAGE, `drawn ${first.length} turns, want at most a page of ${PAGE}`);
    assert.equal(first.at(-1), pid(TURNS));
    assert.equal(await pane.locator(`[data-testid=user-message][data-prompt-id="${pid(1)}"]`).count(), 0, 'the first turn is not drawn');
    assert.ok(
      first.every((id) => Number(id.slice(5)) > TURNS - PAGE),
      `only the latest page's turns are drawn: ${first.join(' ')}`,
    );
    await pane.getByTestId('show-earlier-turns').waitFor({ state: 'attached', ...T });

    // The reader scrolls to the top. Where the topmost turn was is noted
    // first: it should still be there once the earlier turns are above it.
    const timeline = pane.locator('.timeline');
    const top = first[0];
    const anchor = pane.locator(`[data-testid=user-message][data-prompt-id="${top}"]`);
    const before = await timeline.evaluate((el, sel) => {
      const a = el.querySelector(sel);
      el.scrollTop = 0;
      el.dispatchEvent(new Event('scroll'));
      return a.getBoundingClientRect().top - el.getBoundingClientRect().top;
    }, `[data-testid=user-message][data-prompt-id="${top}"]`);
    await pane.locator(`[data-testid=user-message][data-prompt-id="${pid(1)}"]`).waitFor({ state: 'attached', ...T });
    const after = await anchor.evaluate((a) => a.getBoundingClientRect().top - a.closest('.timeline').getBoundingClientRect().top);
    t.diagnostic(`the turn read before the earlier ones came: ${before.toFixed(1)} px from the top of the view, then ${after.toFixed(1)} px`);
    assert.ok(Math.abs(after - before) <= 2, `what the reader looked at stays in place: ${before} px, then ${after} px`);
    assert.ok(await anchor.isVisible());
    assert.ok((await timeline.evaluate((el) => el.scrollTop)) > 0, 'the earlier turns are above the view');

    // Every turn once, in order; the start of the session is marked.
    const all = Array.from({ length: TURNS }, (_, i) => pid(i + 1));
    assert.deepEqual(await drawnTurns(pane), all);
    assert.deepEqual(
      await drawnReplies(pane),
      all.map((_, i) => `reply ${i + 1}`),
    );
    assert.equal(reads.length, opened + 1);
    assert.match(reads.at(-1), new RegExp(`^\\?limit=${PAGE}&pageToken=[A-Za-z0-9_-]+$`));
    await pane.getByTestId('session-start').waitFor({ state: 'attached', ...T });
    assert.equal(await pane.getByTestId('show-earlier-turns').count(), 0);
    await shot(page, 'history-earlier');
    assert.deepEqual(await scan(t, page, 'a session read back to its start'), []);

    // A new prompt: its reply streams in at the bottom, after everything.
    const box = pane.getByRole('textbox', { name: 'Message' });
    await box.click();
    await box.fill('/echo the newest reply');
    await box.press('Enter');
    const newest = pane.locator('[data-testid=agent-message]', { hasText: 'the newest reply' });
    await newest.waitFor(T);
    assert.ok(await newest.isVisible(), 'the new reply is in view');
    const replies = await drawnReplies(pane);
    assert.equal(replies.length, TURNS + 1);
    assert.equal(replies.at(-1), 'the newest reply');
    assert.equal(new Set(await drawnTurns(pane)).size, TURNS + 1, 'no turn drawn twice');
    assert.deepEqual(appProblems(browser.problems), []);
  });

  test('after a reload, "Show earlier turns" reads them from the keyboard; the reader at the bottom stays there', { timeout: 60_000 }, async (t) => {
    reads.length = 0;
    await page.goto('about:blank');
    const pane = await openSession(page, daemon, sid);
    const newest = pane.locator('[data-testid=agent-message]', { hasText: 'the newest reply' });
    await newest.waitFor(T);
    assert.ok(reads.length > 0 && reads.every((q) => q === `?limit=${PAGE}`), reads.join(' '));
    const opened = reads.length;
    assert.equal(await pane.locator(`[data-testid=user-message][data-prompt-id="${pid(1)}"]`).count(), 0);
    const button = pane.getByRole('button', { name: 'Show earlier turns' });
    await button.waitFor({ state: 'attached', ...T });
    // Without scrolling to it (a screen reader's user, or Tab from above).
    await button.evaluate((b) => b.focus({ preventScroll: true }));
    await page.keyboard.press('Enter');
    await pane.locator(`[data-testid=user-message][data-prompt-id="${pid(1)}"]`).waitFor({ state: 'attached', ...T });
    const turns = await drawnTurns(pane);
    assert.equal(turns.length, TURNS + 1);
    assert.equal(new Set(turns).size, TURNS + 1, 'no turn drawn twice');
    assert.deepEqual(turns.slice(0, TURNS), Array.from({ length: TURNS }, (_, i) => pid(i + 1)));
    assert.ok(await newest.isVisible(), 'the latest reply is still in view');
    assert.equal(reads.length, opened + 1);
    assert.match(reads.at(-1), /pageToken=/);
    assert.deepEqual(await scan(t, page, 'the session after "Show earlier turns"'), []);
    assert.deepEqual(appProblems(browser.problems), []);
  });
});
