// Agent Markdown in real Chromium against the real tetherd and demo agent:
// a table and highlighted code render, and HTML an agent sends executes
// nothing (no script, no event handler, no javascript: link, no image load).
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

// What a compromised or prompt-injected agent might answer, next to the
// Markdown a real one does.
const REPLY = [
  '## Results',
  '',
  '| tool | status |',
  '|------|-------:|',
  '| go vet | ok |',
  '',
  '```go',
  'func main() { fmt.Println("hi") }',
  '```',
  '',
  '<script>window.__pwned = "script"</script>',
  '',
  '<img src="x" onerror="window.__pwned = \'onerror\'">',
  '',
  '[click me](javascript:window.__pwned=\'link\') and [docs](https://example.com/docs)',
  '',
  '![tracker](https://example.com/pixel.png)',
].join('\n');

describe('Markdown in the Web Shell', { concurrency: false }, () => {
  test('an agent message with a table, code and a <script> payload renders the Markdown and executes nothing', { timeout: 60_000 }, async () => {
    const page = await browser.newPage();
    // Anything the CSP refuses (an inline script or handler that reached
    // the DOM) is recorded, as well as any request for the image.
    await page.addInitScript(() => {
      window.__violations = [];
      document.addEventListener('securitypolicyviolation', (e) => window.__violations.push(`${e.violatedDirective} ${e.blockedURI}`));
    });
    const imageRequests = [];
    page.on('request', (r) => {
      if (r.url().includes('pixel.png') || r.url().endsWith('/x')) imageRequests.push(r.url());
    });
    await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: daemon.base });

    const s = await daemon.api('POST', '/session', { agentProfileId: 'demo', cwd: daemon.workspace, title: 'Markdown' });
    const r = await daemon.api('POST', `/session/${s.id}/prompt`, { prompt: [{ type: 'text', text: `/echo ${REPLY}` }] });
    await daemon.waitTurn(s.id, (t) => t.turns.some((x) => x.promptId === r.promptId && x.state === 'completed'));

    await page.goto(daemon.shellUrl);
    const row = page.locator(`[data-testid=session-row][data-session-id="${s.id}"] .srow__open`);
    await row.waitFor(T);
    await row.click();
    const pane = page.locator(`[data-testid=pane][data-session-id="${s.id}"]`);
    const msg = pane.locator('[data-testid=agent-message]', { hasText: 'Results' });
    await msg.waitFor(T);

    // The Markdown rendered.
    assert.equal(await msg.locator('h2').textContent(), 'Results');
    assert.equal(await msg.locator('table tbody td').first().textContent(), 'go vet');
    assert.equal(await msg.locator('table td[align=right]').textContent(), 'ok');
    const code = msg.locator('pre.code code.language-go');
    assert.equal(await code.textContent(), 'func main() { fmt.Println("hi") }');
    assert.equal(await code.locator('.hljs-keyword', { hasText: 'func' }).count(), 1, 'the Go code is highlighted');
    assert.equal(await code.evaluate((el) => getComputedStyle(el.querySelector('.hljs-keyword')).color !== getComputedStyle(el).color), true, 'keywords are coloured');
    const docs = msg.locator('a', { hasText: 'docs' });
    assert.equal(await docs.getAttribute('href'), 'https://example.com/docs');
    assert.equal(await docs.getAttribute('target'), '_blank');
    assert.equal(await docs.getAttribute('rel'), 'noopener noreferrer nofollow');

    // The HTML is shown as text and none of it is live.
    assert.match(await msg.textContent(), /<script>window.__pwned = "script"<\/script>/);
    assert.equal(await pane.locator('script, img, iframe, [onerror], [onclick]').count(), 0);
    assert.equal(await msg.locator('a', { hasText: 'click me' }).getAttribute('href'), null, 'the javascript: link has no href');
    await msg.locator('a', { hasText: 'click me' }).click();
    assert.equal(await msg.locator('a.md-image', { hasText: 'tracker' }).getAttribute('href'), 'https://example.com/pixel.png');
    assert.equal(await page.evaluate(() => window.__pwned), undefined);
    assert.deepEqual(await page.evaluate(() => window.__violations), [], 'nothing even tried to run');
    assert.deepEqual(imageRequests, [], 'no image was requested');

    // The copy button copies the code, not its own label.
    await msg.locator('pre.code').hover();
    await msg.locator('pre.code button.code__copy').click();
    await msg.locator('pre.code button.code__copy', { hasText: 'Copied' }).waitFor(T);
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), 'func main() { fmt.Println("hi") }');
    await shot(page, 'md-01-agent-markdown');
  });

  test('no console errors from the app', () => {
    assert.deepEqual(appProblems(browser.problems), []);
  });
});
