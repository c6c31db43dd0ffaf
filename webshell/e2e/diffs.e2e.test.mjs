// Changes and files at 1280×800 against the real tetherd and its demo
// agent: a turn that writes a Go file shows a highlighted diff, unified or
// side by side (the switch); the file viewer highlights Go and TypeScript
// by the file's name; a permission card shows the diff or the command it
// asks about, Allow once the primary answer; and axe finds no serious or
// critical violation in these views.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { scan } from './axe.mjs';
import { appProblems, Daemon, launchBrowser, openSession } from './harness.mjs';

const T = { timeout: 20_000 };

// Without a final newline: the demo agent writes its TEXT trimmed.
const OLD_GO = 'package main\n\nimport "fmt"\n\nfunc main() {\n\tfmt.Println("hello")\n}';
const NEW_GO = 'package main\n\nimport "fmt"\n\n// main greets the world.\nfunc main() {\n\tfmt.Println("hello, world")\n}';

describe('Web Shell diffs and files', { concurrency: false }, () => {
  let daemon;
  let browser;

  before(async () => {
    daemon = await Daemon.start();
    browser = await launchBrowser({ width: 1280, height: 800 });
  });

  after(async () => {
    await browser?.close();
    await daemon?.stop();
  });

  test('a turn that writes a file: its diff highlighted, unified or side by side; the files highlighted', { timeout: 90_000 }, async (t) => {
    const cwd = join(daemon.workspace, 'diffs');
    mkdirSync(cwd, { recursive: true });
    writeFileSync(join(cwd, 'main.go'), OLD_GO);
    writeFileSync(join(cwd, 'util.ts'), 'export const answer: number = 42;\n');
    const s = await daemon.api('POST', '/session', { agentProfileId: 'demo', cwd, title: 'Diffs' });
    await daemon.api('POST', `/session/${s.id}/prompt`, { prompt: [{ type: 'text', text: `/tool write main.go ${NEW_GO}` }], promptId: 'w1' });
    await daemon.waitTurn(s.id, (tr) => tr.turns.some((x) => x.promptId === 'w1' && x.state === 'completed'));

    const page = await browser.newPage();
    const pane = await openSession(page, daemon, s.id);
    await pane.getByTestId('workspace-toggle').click();
    await pane.locator('[data-testid=turn-end-changes][data-prompt-id=w1] [data-testid=turn-changes]').click();
    const ws = pane.getByTestId('workspace');
    const patch = ws.locator('[data-testid=ws-patch][data-path="main.go"]');

    // Unified by default in a window this narrow: one column, the removed
    // line before the added one, Go tokens highlighted.
    await ws.locator('[data-testid=ws-patch][data-path="main.go"][data-format=line-by-line][data-state=drawn]').waitFor(T);
    assert.equal(await ws.getByTestId('diff-format-line-by-line').getAttribute('aria-pressed'), 'true');
    assert.equal(await patch.locator('.d2h-file-side-diff').count(), 0);
    assert.deepEqual(await patch.locator('.d2h-del .d2h-code-line-ctn').allTextContents(), ['\tfmt.Println("hello")']);
    assert.deepEqual(await patch.locator('.d2h-ins .d2h-code-line-ctn').allTextContents(), ['// main greets the world.', '\tfmt.Println("hello, world")']);
    assert.ok((await patch.locator('.hljs-keyword').allTextContents()).includes('func'), 'Go keywords are highlighted');
    assert.equal(await patch.locator('.d2h-ins .hljs-comment').textContent(), '// main greets the world.');
    // Highlighted means coloured: a keyword is not the text's colour.
    const colour = (sel) => patch.locator(sel).first().evaluate((e) => getComputedStyle(e).color);
    assert.notEqual(await colour('.hljs-keyword'), await colour('.d2h-code-line-ctn'));
    assert.deepEqual(await scan(t, page, 'Changes, unified'), []);

    // Side by side: two columns, the old line on the left, the new on the right.
    await ws.getByTestId('diff-format-side-by-side').click();
    await ws.locator('[data-testid=ws-patch][data-path="main.go"][data-format=side-by-side][data-state=drawn]').waitFor(T);
    assert.equal(await ws.getByTestId('diff-format-side-by-side').getAttribute('aria-pressed'), 'true');
    const sides = patch.locator('.d2h-file-side-diff');
    assert.equal(await sides.count(), 2);
    assert.match(await sides.nth(0).locator('.d2h-del').last().textContent(), /fmt\.Println\("hello"\)/);
    assert.match(await sides.nth(1).locator('.d2h-ins').last().textContent(), /fmt\.Println\("hello, world"\)/);
    assert.ok((await patch.locator('.hljs-keyword').allTextContents()).includes('func'));
    assert.deepEqual(await scan(t, page, 'Changes, side by side'), []);

    // The choice is remembered across a reload.
    await page.reload();
    await pane.getByTestId('workspace-toggle').waitFor(T);
    if (!(await pane.getByTestId('workspace').isVisible())) await pane.getByTestId('workspace-toggle').click();
    await pane.locator('[data-testid=turn-end-changes][data-prompt-id=w1] [data-testid=turn-changes]').click();
    await ws.locator('[data-testid=ws-patch][data-path="main.go"][data-format=side-by-side][data-state=drawn]').waitFor(T);
    await ws.getByTestId('diff-format-line-by-line').click();
    await ws.locator('[data-testid=ws-patch][data-path="main.go"][data-format=line-by-line][data-state=drawn]').waitFor(T);
    assert.equal(await patch.locator('.d2h-file-side-diff').count(), 0);

    // The file viewer: Go and TypeScript by their names.
    await ws.getByTestId('ws-tab-files').click();
    await ws.locator('[data-testid=ws-entry][data-path="main.go"]').click();
    const text = ws.locator('[data-testid=ws-viewer][data-path="main.go"] [data-testid=ws-file-text]');
    await text.and(page.locator('[data-lang=go]')).waitFor(T);
    assert.deepEqual(await text.locator('.hljs-keyword').allTextContents(), ['package', 'import', 'func']);
    assert.equal(await text.locator('.hljs-string').first().textContent(), '"fmt"');
    await ws.locator('[data-testid=ws-entry][data-path="util.ts"]').click();
    const ts = ws.locator('[data-testid=ws-viewer][data-path="util.ts"] [data-testid=ws-file-text]');
    await ts.and(page.locator('[data-lang=typescript]')).waitFor(T);
    assert.deepEqual(await ts.locator('.hljs-keyword').allTextContents(), ['export', 'const']);
    assert.equal(await ts.locator('.hljs-number').textContent(), '42');
    assert.deepEqual(await scan(t, page, 'Files'), []);

    assert.deepEqual(appProblems(browser.problems), []);
    await page.close();
  });

  test('a permission card shows the diff or the command it asks about; Allow once is primary', { timeout: 90_000 }, async (t) => {
    const s = await daemon.api('POST', '/session', { agentProfileId: 'demo', cwd: daemon.workspace, title: 'Permissions' });
    const page = await browser.newPage();
    const pane = await openSession(page, daemon, s.id);

    await daemon.api('POST', `/session/${s.id}/prompt`, { prompt: [{ type: 'text', text: '/permission' }], promptId: 'p1' });
    const perm = pane.getByTestId('permission');
    await perm.locator('[data-testid=permission-diff][data-state=drawn]').waitFor(T);
    assert.match(await perm.locator('[data-testid=permission-diff]').getAttribute('data-path'), /\/demo\.txt$/);
    assert.deepEqual(await perm.locator('[data-testid=permission-diff] .d2h-ins .d2h-code-line-ctn').allTextContents(), ['A line the demo agent would add.']);
    const once = perm.getByRole('button', { name: 'Allow once' });
    const always = perm.getByRole('button', { name: 'Allow always' });
    assert.equal(await once.getAttribute('data-primary'), 'true');
    assert.equal(await always.getAttribute('data-primary'), null);
    // Visibly so: Allow once is filled with the accent, Allow always is not.
    const bg = (l) => l.evaluate((e) => getComputedStyle(e).backgroundColor);
    const accent = await page.evaluate(() => {
      const probe = document.createElement('span');
      probe.style.color = 'var(--accent)';
      document.body.append(probe);
      const c = getComputedStyle(probe).color;
      probe.remove();
      return c;
    });
    assert.equal(await bg(once), accent);
    assert.notEqual(await bg(always), accent);
    assert.deepEqual(await scan(t, page, 'permission card (diff)'), []);
    await once.click();
    await pane.getByTestId('permission-record').filter({ hasText: 'Allow once' }).waitFor(T);
    await daemon.waitTurn(s.id, (tr) => tr.turns.some((x) => x.promptId === 'p1' && x.state === 'completed'));

    await daemon.api('POST', `/session/${s.id}/prompt`, { prompt: [{ type: 'text', text: '/permission run go test ./...' }], promptId: 'p2' });
    await perm.getByTestId('permission-command').waitFor(T);
    assert.equal(await perm.getByTestId('permission-command').textContent(), 'go test ./...');
    assert.equal(await perm.locator('[data-testid=permission-diff]').count(), 0);
    assert.deepEqual(await scan(t, page, 'permission card (command)'), []);
    await perm.getByRole('button', { name: 'Reject' }).click();
    await daemon.waitTurn(s.id, (tr) => tr.turns.some((x) => x.promptId === 'p2' && x.state === 'completed'));
    assert.equal((await daemon.api('GET', `/session/${s.id}/transcript`)).pendingPermissions.length, 0);

    assert.deepEqual(appProblems(browser.problems), []);
    await page.close();
  });
});
