// The README's screenshots, in docs/images: webshell.png (1280×800, the
// shell with titled sessions and one that ran a plain prompt: plan, a read
// tool call, the streamed reply, then a Markdown answer, with an image and
// a file mention waiting in the composer) and webshell-phone.png (390×844,
// the same session on a phone). Taken only when TETHER_SCREENSHOT names
// the directory (`make screenshot`): a PNG of live ids and times is not
// byte-stable, so ordinary test runs must not rewrite the committed ones.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { appProblems, Daemon, launchBrowser, openSession } from './harness.mjs';

const out = process.env.TETHER_SCREENSHOT;
const T = { timeout: 15_000 };

/** A small PNG drawn in the page: a screenshot-like gradient. */
async function picture(page) {
  const b64 = await page.evaluate(async () => {
    const c = document.createElement('canvas');
    c.width = 96;
    c.height = 64;
    const g = c.getContext('2d');
    const grad = g.createLinearGradient(0, 0, 96, 64);
    grad.addColorStop(0, '#4f46e5');
    grad.addColorStop(1, '#22c55e');
    g.fillStyle = grad;
    g.fillRect(0, 0, 96, 64);
    g.fillStyle = '#fff';
    g.fillRect(10, 10, 50, 8);
    g.fillRect(10, 26, 70, 6);
    const b = await new Promise((r) => c.toBlob(r, 'image/png'));
    return btoa(String.fromCharCode(...new Uint8Array(await b.arrayBuffer())));
  });
  return Buffer.from(b64, 'base64');
}

test('screenshots of the Web Shell for the README', { skip: !out && 'TETHER_SCREENSHOT is not set', timeout: 120_000 }, async () => {
  const daemon = await Daemon.start();
  const desktop = await launchBrowser({ width: 1280, height: 800 });
  const phone = await launchBrowser({ width: 390, height: 844 });
  try {
    writeFileSync(join(daemon.workspace, 'main.go'), 'package main\n\nfunc main() {}\n');
    for (const title of ['Fix the flaky login test', 'Upgrade the build to Go 1.26']) {
      await daemon.api('POST', '/session', { agentProfileId: 'demo', cwd: daemon.workspace, title });
    }
    const s = await daemon.api('POST', '/session', { agentProfileId: 'demo', cwd: daemon.workspace, title: 'Tour of the demo agent' });
    const prompts = [
      'What is in this directory?',
      '/echo Here is a **summary**:\n\n| file | lines |\n|---|---|\n| README.md | 3 |\n| main.go | 3 |\n\n```sh\ncat README.md\n```',
    ];
    for (const text of prompts) {
      const r = await daemon.api('POST', `/session/${s.id}/prompt`, { prompt: [{ type: 'text', text }] });
      await daemon.waitTurn(s.id, (t) => t.turns.some((x) => x.promptId === r.promptId && x.state === 'completed'));
    }
    mkdirSync(out, { recursive: true });

    const page = await desktop.newPage();
    const pane = await openSession(page, daemon, s.id, T);
    await pane.getByText('cat README.md').last().waitFor(T);
    await pane.getByTestId('attach-input').setInputFiles({ name: 'screenshot.png', mimeType: 'image/png', buffer: await picture(page) });
    await pane.getByTestId('attachment').waitFor(T);
    const box = pane.getByRole('textbox', { name: 'Message' });
    await box.click();
    await box.pressSequentially('What does @ma');
    await pane.getByTestId('mention-menu').getByRole('option', { name: 'main.go' }).waitFor(T);
    await page.screenshot({ path: join(out, 'webshell.png') });

    const small = await phone.newPage();
    await small.goto(daemon.shellUrl);
    await small.getByTestId('sidebar-toggle').click();
    await small.locator(`[data-testid=session-row][data-session-id="${s.id}"] .srow__open`).click();
    const p = small.locator(`[data-testid=pane][data-session-id="${s.id}"]`);
    await p.locator('[data-testid=connection][data-conn=open]').waitFor(T);
    await p.getByText('cat README.md').last().waitFor(T);
    await small.getByTestId('sidebar').waitFor({ state: 'hidden', ...T }); // the drawer has slid away
    await small.screenshot({ path: join(out, 'webshell-phone.png') });
    assert.deepEqual(appProblems(desktop.problems), []);
    assert.deepEqual(appProblems(phone.problems), []);
  } finally {
    await desktop.close();
    await phone.close();
    await daemon.stop();
  }
});
