// The composer's images and `@` mentions in Chromium against the real
// daemon and demo agent, which names in its reply each block it received
// (an image by type and size, an embedded file by lines): paste, drop and
// Attach, a big screenshot scaled down to fit, files completed from the
// workspace and embedded; and an agent that takes no images is offered none.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { scan } from './axe.mjs';
import { appProblems, Daemon, launchBrowser, openSession, shot, TETHERD } from './harness.mjs';

const T = { timeout: 20_000 };

let daemon;
let browser;
let page;

before(async () => {
  daemon = await Daemon.start({
    agentsYaml: (d) =>
      `agents:\n  - id: blind\n    displayName: Text-only agent\n    command: ${JSON.stringify(TETHERD)}\n` +
      `    args: ${JSON.stringify(['demo-agent', '--state-dir', join(d.root, 'blind-state'), '--no-image'])}\n`,
  });
  mkdirSync(join(daemon.workspace, 'src'), { recursive: true });
  writeFileSync(join(daemon.workspace, 'src', 'app.go'), 'package main\n\nfunc main() {}\n');
  // The Web Shell reads what each agent takes from its probe at start-up.
  const deadline = Date.now() + T.timeout;
  for (;;) {
    const { agents } = await daemon.api('GET', '/agents');
    if (['demo', 'blind'].every((id) => agents.find((a) => a.id === id)?.capabilities)) break;
    if (Date.now() > deadline) throw new Error('the agents were never probed');
    await new Promise((r) => setTimeout(r, 100));
  }
  browser = await launchBrowser();
  page = await browser.newPage();
});

after(async () => {
  await browser?.close();
  await daemon?.stop();
});

/** A PNG drawn in the page, as a Buffer: w×h, noisy (so it does not compress) when noisy. */
async function makePng(w, h, noisy) {
  return page.evaluate(
    async ([w, h, noisy]) => {
      const c = document.createElement('canvas');
      c.width = w;
      c.height = h;
      const g = c.getContext('2d');
      if (noisy) {
        const img = g.createImageData(w, h);
        for (let i = 0; i < img.data.length; i++) img.data[i] = (i * 2654435761) >>> 24 ^ (i & 255);
        g.putImageData(img, 0, 0);
      } else {
        g.fillStyle = '#4f46e5';
        g.fillRect(0, 0, w, h);
      }
      const b = await new Promise((r) => c.toBlob(r, 'image/png'));
      const u = new Uint8Array(await b.arrayBuffer());
      let s = '';
      for (let i = 0; i < u.length; i += 0x8000) s += String.fromCharCode(...u.subarray(i, i + 0x8000));
      return btoa(s);
    },
    [w, h, noisy],
  ).then((b64) => Buffer.from(b64, 'base64'));
}

/** Dispatches a paste or a drop of the PNG bytes as a file on target. */
async function dispatchFile(target, kind, bytes, name) {
  await target.evaluate(
    (el, [kind, bytes, name]) => {
      const dt = new DataTransfer();
      dt.items.add(new File([Uint8Array.from(atob(bytes), (c) => c.charCodeAt(0))], name, { type: 'image/png' }));
      const e = kind === 'paste' ? new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }) : new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true });
      el.dispatchEvent(e);
    },
    [kind, bytes.toString('base64'), name],
  );
}

async function reply(pane, promptId) {
  const t = await daemon.waitTurn(pane.sid, (t) => t.turns.find((x) => x.promptId === promptId)?.state === 'completed');
  return t.messages.filter((m) => m.role === 'agent' && m.promptId === promptId).map((m) => m.text).join('');
}

/** Sends what the composer holds and returns the turn's promptId (the newest turn). */
async function sendAndWait(pane, box) {
  const before = (await daemon.api('GET', `/session/${pane.sid}/transcript`)).turns.length;
  await box.press('Enter');
  const t = await daemon.waitTurn(pane.sid, (t) => t.turns.length > before);
  return t.turns.at(-1).promptId;
}

describe('Web Shell composer: images and @ mentions', { concurrency: false }, () => {
  let pane;
  let box;

  test('a pasted and a dropped image reach the agent whole and are stored with the turn', { timeout: 60_000 }, async () => {
    const s = await daemon.api('POST', '/session', { agentProfileId: 'demo', cwd: daemon.workspace, title: 'Images' });
    pane = await openSession(page, daemon, s.id);
    pane.sid = s.id;
    box = pane.getByRole('textbox', { name: 'Message' });
    const small = await makePng(64, 48, false);
    await dispatchFile(box, 'paste', small, 'pasted.png');
    await dispatchFile(pane.locator('form.composer'), 'drop', small, 'dropped.png');
    await pane.getByTestId('attachment').nth(1).waitFor(T);
    assert.deepEqual(await pane.getByTestId('attachment').locator('.attachment__name').allInnerTexts(), ['pasted.png', 'dropped.png']);
    await box.fill('what are these?');
    await shot(page, 'composer-images');
    const pid = await sendAndWait(pane, box);
    const said = await reply(pane, pid);
    assert.match(said, new RegExp(`You attached an image \\(image/png, ${small.length} bytes\\); an image \\(image/png, ${small.length} bytes\\)\\.`));
    const turn = await daemon.api('GET', `/session/${pane.sid}/turns/${pid}`);
    assert.deepEqual(turn.prompt.map((b) => b.type), ['text', 'image', 'image']);
    assert.equal(Buffer.from(turn.prompt[1].data, 'base64').length, small.length);
    await pane.locator('[data-testid=agent-message]', { hasText: 'You attached an image' }).waitFor(T);
    assert.equal(await pane.getByTestId('attachment').count(), 0, 'the composer is empty after sending');
    // The user's message shows the pictures it carried, not placeholders.
    const mine = pane.locator(`[data-testid=user-message][data-prompt-id="${pid}"]`);
    await mine.getByRole('img', { name: 'Image 2' }).waitFor(T);
    assert.equal(await mine.getByRole('img').count(), 2);
    assert.ok(!(await mine.innerText()).includes('[image]'), await mine.innerText());
  });

  test('a screenshot too big to send is scaled down, and Attach opens a file', { timeout: 60_000 }, async () => {
    const big = await makePng(1800, 500, true);
    assert.ok(big.length > 1_000_000, `the test image is ${big.length} bytes, want more than 1 MB`);
    await pane.getByTestId('attach-input').setInputFiles({ name: 'screen.png', mimeType: 'image/png', buffer: big });
    await pane.getByTestId('attachment').waitFor(T);
    const pid = await sendAndWait(pane, box);
    const said = await reply(pane, pid);
    const m = /You attached an image \(image\/jpeg, (\d+) bytes\)\./.exec(said);
    assert.ok(m, `reply: ${said}`);
    assert.ok(Number(m[1]) <= 1_000_000, `scaled image is ${m[1]} bytes`);
  });

  test('"@" completes workspace paths; the picked file is embedded in the prompt', { timeout: 60_000 }, async (t) => {
    await box.click();
    await box.fill('');
    await box.pressSequentially('explain @');
    const menu = pane.getByTestId('mention-menu');
    await menu.getByRole('option', { name: 'src/' }).waitFor(T);
    assert.deepEqual(await scan(t, page, 'composer with the @ list'), []);
    await box.pressSequentially('sr');
    await box.press('Enter');
    assert.equal(await box.inputValue(), 'explain @src/');
    await menu.getByRole('option', { name: 'src/app.go' }).waitFor(T);
    await shot(page, 'composer-mention');
    await box.press('Enter');
    assert.equal(await box.inputValue(), 'explain @src/app.go ');
    await box.pressSequentially('please');
    const pid = await sendAndWait(pane, box);
    const said = await reply(pane, pid);
    assert.match(said, /You attached app\.go \(embedded, 3 lines\)\./);
    const turn = await daemon.api('GET', `/session/${pane.sid}/turns/${pid}`);
    assert.equal(turn.prompt[0].text, 'explain @src/app.go please');
    assert.equal(turn.prompt[1].type, 'resource');
    assert.equal(turn.prompt[1].resource.text, 'package main\n\nfunc main() {}\n');
    assert.equal(turn.prompt[1].resource.uri, `file://${join(daemon.workspace, 'src', 'app.go')}`);
    const mine = pane.locator(`[data-testid=user-message][data-prompt-id="${pid}"]`);
    await mine.getByTestId('message-attachments').filter({ hasText: 'app.go' }).waitFor(T);
    await shot(page, 'message-attachments');
  });

  test('an agent that takes no images offers no Attach, and says why a pasted one is not added', { timeout: 60_000 }, async (t) => {
    const s = await daemon.api('POST', '/session', { agentProfileId: 'blind', cwd: daemon.workspace, title: 'Text only' });
    const p = await openSession(page, daemon, s.id);
    const b = p.getByRole('textbox', { name: 'Message' });
    assert.equal(await p.getByTestId('attach').count(), 0);
    await dispatchFile(b, 'paste', await makePng(8, 8, false), 'x.png');
    await p.getByTestId('composer-note').waitFor(T);
    assert.equal(await p.getByTestId('composer-note').innerText(), 'This agent does not take images.');
    assert.equal(await p.getByTestId('attachment').count(), 0);
    assert.deepEqual(await scan(t, page, 'composer with a refused image'), []);
  });

  test('no console errors from the app', () => {
    assert.deepEqual(appProblems(browser.problems), []);
  });
});
