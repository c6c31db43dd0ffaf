// Sessions you can find (issue 34, item 1), in headless Chromium against
// the real tetherd and demo agent: titles from the first prompt, relative
// last activity, rename and archive from the sidebar, search over what was
// said, and the Ctrl-K switcher. Each step is checked against the API too.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { scan } from './axe.mjs';
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

/** A session with one ended turn of prompt text, made through the API. */
async function sessionSaying(text) {
  const s = await daemon.api('POST', '/session', { agentProfileId: 'demo', cwd: daemon.workspace, initialPrompt: [{ type: 'text', text }] });
  await daemon.waitTurn(s.id, (t) => t.turns.length > 0 && t.turns.every((x) => x.state !== 'running' && x.state !== 'queued'));
  return s.id;
}

const rowOf = (page, id) => page.locator(`.tasks__list [data-testid=session-row][data-session-id="${id}"]`);

describe('finding sessions', () => {
  test('titles, rename, archive, search and the switcher', async (t) => {
    const quince = await sessionSaying('/echo the quince pipeline is green');
    const medlar = await sessionSaying('/echo medlar notes');
    const page = await browser.newPage();
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.goto(daemon.shellUrl);

    // The first prompt titles the session; its last activity reads as a relative time.
    const row = rowOf(page, quince);
    await row.locator('.srow__name', { hasText: '/echo the quince pipeline is green' }).waitFor(T);
    assert.match(await row.locator('time').innerText(), /now|sec|min/);

    // Rename inline.
    await row.hover();
    await row.getByTestId('rename').click();
    const input = page.getByTestId('rename-input');
    await input.fill('Quince work');
    await input.press('Enter');
    await rowOf(page, quince).locator('.srow__name', { hasText: 'Quince work' }).waitFor(T);
    let s = await daemon.api('GET', `/session/${quince}`);
    assert.equal(s.title, 'Quince work');
    assert.equal(s.titleSource, 'user');

    // Archive: the row leaves the list, the API says archived.
    await rowOf(page, medlar).hover();
    await rowOf(page, medlar).getByTestId('archive').click();
    await rowOf(page, medlar).waitFor({ state: 'detached', ...T });
    // Its task had no other session: it is put away with it.
    await page.locator('.task__title', { hasText: 'medlar' }).waitFor({ state: 'detached', ...T });
    s = await daemon.api('GET', `/session/${medlar}`);
    assert.equal(s.archived, true);

    // Search what the agent said: the server finds it.
    await page.getByTestId('session-search').fill('pipeline green');
    const results = page.getByTestId('search-results');
    await results.locator(`[data-testid=session-row][data-session-id="${quince}"]`).waitFor(T);
    assert.equal(await results.locator('[data-testid=session-row]').count(), 1);
    await page.getByTestId('session-search').fill('nothing-says-this');
    await results.getByText(/No session holds every word/).waitFor(T);
    await page.getByTestId('session-search').fill('');
    await shot(page, 'find-sidebar');
    assert.deepEqual(await scan(t, page, 'sidebar'), []);

    // Ctrl-K: filter by name, Enter opens the session.
    await page.keyboard.press('Control+k');
    await page.getByTestId('quick-switcher').waitFor(T);
    await page.getByTestId('switcher-input').fill('quince');
    await page.locator(`[data-testid=switcher-item][data-session-id="${quince}"]`).waitFor(T);
    await shot(page, 'find-switcher');
    assert.deepEqual(await scan(t, page, 'Ctrl-K switcher'), []);
    await page.getByTestId('switcher-input').press('Enter');
    await page.getByTestId('quick-switcher').waitFor({ state: 'detached', ...T });
    await page.locator(`[data-testid=pane][data-session-id="${quince}"]`).waitFor(T);
    assert.deepEqual(appProblems(browser.problems), []);

    // The new-session dialog, with an agent selected.
    await page.getByTestId('new-session').first().click();
    await page.getByRole('dialog').waitFor(T);
    assert.deepEqual(await scan(t, page, 'new-session dialog'), []);
  });
});
