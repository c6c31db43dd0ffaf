// The Web Shell on a phone (390×844) against the real tetherd: the
// sessions are a drawer (a button opens it; choosing a session or a tap
// outside closes it), the page never scrolls sideways, and the composer
// and a permission card are usable: their buttons at least 40px tall,
// within the screen. axe finds no serious or critical violation.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { scan } from './axe.mjs';
import { appProblems, Daemon, launchBrowser } from './harness.mjs';

const T = { timeout: 20_000 };
const WIDTH = 390;

/** The page scrolls sideways when its content is wider than the screen. */
const scrollWidth = (page) => page.evaluate(() => document.documentElement.scrollWidth);

/** Height and horizontal extent of each button matched, by its text. */
async function boxes(locator) {
  return locator.evaluateAll((els) => els.map((e) => ({ name: e.textContent.trim(), ...JSON.parse(JSON.stringify(e.getBoundingClientRect())) })));
}

describe('Web Shell on a phone', { concurrency: false }, () => {
  let daemon;
  let browser;

  before(async () => {
    daemon = await Daemon.start();
    browser = await launchBrowser({ width: WIDTH, height: 844 });
  });

  after(async () => {
    await browser?.close();
    await daemon?.stop();
  });

  test('the sidebar is a drawer; composer and permission card fit and are big enough to tap', { timeout: 90_000 }, async (t) => {
    const s = await daemon.api('POST', '/session', { agentProfileId: 'demo', cwd: daemon.workspace, title: 'On the phone' });
    const page = await browser.newPage();
    await page.goto(daemon.shellUrl);
    const toggle = page.getByTestId('sidebar-toggle');
    const sidebar = page.getByTestId('sidebar');
    const row = page.locator(`[data-testid=session-row][data-session-id="${s.id}"] .srow__open`);
    await toggle.waitFor(T);
    // Closed, the drawer is out of sight and out of reach (not focusable).
    assert.equal(await sidebar.isVisible(), false);
    assert.equal(await toggle.getAttribute('aria-expanded'), 'false');
    assert.ok(await scrollWidth(page) <= WIDTH, `scrollWidth ${await scrollWidth(page)}`);

    // Opened by its button, closed by a tap outside it.
    await toggle.click();
    await row.waitFor(T);
    assert.equal(await toggle.getAttribute('aria-expanded'), 'true');
    assert.deepEqual(await scan(t, page, 'phone, drawer open'), []);
    const drawer = await sidebar.boundingBox();
    await page.mouse.click(drawer.x + drawer.width + 20, 400);
    await sidebar.waitFor({ state: 'hidden', ...T });
    assert.equal(await toggle.getAttribute('aria-expanded'), 'false');

    // Opened again, closed by choosing a session, which opens.
    await toggle.click();
    await row.click();
    await sidebar.waitFor({ state: 'hidden', ...T });
    const pane = page.locator(`[data-testid=pane][data-session-id="${s.id}"]`);
    await pane.locator('[data-testid=connection][data-conn=open]').waitFor(T);
    assert.ok(await scrollWidth(page) <= WIDTH, `scrollWidth ${await scrollWidth(page)}`);

    // A permission card with a diff, above the composer: within the
    // screen, its buttons and the composer's at least 40px tall.
    await pane.getByRole('textbox', { name: 'Message' }).fill('/permission');
    await pane.getByTestId('send').click();
    const perm = pane.getByTestId('permission');
    await perm.locator('[data-testid=permission-diff][data-state=drawn]').waitFor(T);
    assert.ok(await scrollWidth(page) <= WIDTH, `scrollWidth ${await scrollWidth(page)} with a permission card`);
    const card = await perm.boundingBox();
    assert.ok(card.x >= 0 && card.x + card.width <= WIDTH, `the card spans ${card.x}..${card.x + card.width}`);
    const buttons = [...(await boxes(perm.getByRole('button'))), ...(await boxes(pane.locator('.composer button')))];
    assert.ok(buttons.length >= 4, JSON.stringify(buttons));
    for (const b of buttons) {
      assert.ok(b.height >= 40, `${b.name} is ${b.height}px tall`);
      assert.ok(b.left >= 0 && b.right <= WIDTH, `${b.name} spans ${b.left}..${b.right}`);
    }
    const box = await pane.getByRole('textbox', { name: 'Message' }).boundingBox();
    assert.ok(box.x >= 0 && box.x + box.width <= WIDTH && box.height >= 40, JSON.stringify(box));
    assert.deepEqual(await scan(t, page, 'phone, permission card'), []);

    await perm.getByRole('button', { name: 'Allow once' }).click();
    await pane.getByTestId('permission-record').filter({ hasText: 'Allow once' }).waitFor(T);
    await daemon.waitTurn(s.id, (tr) => tr.turns.some((x) => x.state === 'completed'));
    assert.ok(await scrollWidth(page) <= WIDTH, `scrollWidth ${await scrollWidth(page)}`);
    assert.deepEqual(appProblems(browser.problems), []);
    await page.close();
  });
});
