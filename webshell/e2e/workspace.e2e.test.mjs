// The workspace panel beside a chat pane, against the real tetherd: Files,
// Changes and Terminal work with the executor, never the agent (here one
// that cannot resume after a restart); a terminal survives a page reload
// (the same shell, its output replayed); on the detached runtime the panel
// waits with a spinner while the executor host does not answer, and its
// terminal survives kill -9 of tetherd.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { appProblems, Daemon, launchBrowser, openSession, shot, TETHERD } from './harness.mjs';

const T = { timeout: 20_000 };

/** The text xterm.js shows (its DOM renderer's rows). */
async function screenText(pane) {
  return (await pane.locator('[data-testid=terminal] .xterm-rows').textContent()) ?? '';
}

async function waitScreen(pane, re, what) {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const text = await screenText(pane);
    if (re.test(text)) return text;
    if (Date.now() > deadline) throw new Error(`${what}: the terminal never showed ${re}; it shows:\n${text}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Types a line into the terminal the pane shows. */
async function typeLine(page, pane, line) {
  await pane.locator('[data-testid=terminal] .term__screen').click();
  await page.keyboard.type(line);
  await page.keyboard.press('Enter');
}

describe('Web Shell workspace panel', { concurrency: false }, () => {
  let daemon;
  let browser;

  before(async () => {
    daemon = await Daemon.start({
      agentsYaml: (d) =>
        `agents:\n  - id: forgetful\n    displayName: Forgetful agent\n    command: ${JSON.stringify(TETHERD)}\n` +
        `    args: ${JSON.stringify(['demo-agent', '--state-dir', join(d.root, 'forgetful-state'), '--no-load', '--no-resume'])}\n` +
        `    historyContextInjection: false\n`,
    });
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await daemon?.stop();
  });

  test('files, changes and terminal work while the agent cannot resume', { timeout: 90_000 }, async () => {
    const cwd = join(daemon.workspace, 'not-resumable');
    mkdirSync(join(cwd, 'docs'), { recursive: true });
    writeFileSync(join(cwd, 'docs', 'guide.md'), '# Guide\n\nRead me.\n');
    const s = await daemon.api('POST', '/session', { agentProfileId: 'forgetful', cwd, title: 'Workspace without the agent' });
    await daemon.api('POST', `/session/${s.id}/prompt`, { prompt: [{ type: 'text', text: '/tool write notes.txt written by the agent' }], promptId: 'w1' });
    await daemon.waitTurn(s.id, (t) => t.turns.some((x) => x.promptId === 'w1' && x.state === 'completed'));
    await daemon.api('POST', `/session/${s.id}/prompt`, { prompt: [{ type: 'text', text: '/tool write later.txt by the second turn' }], promptId: 'w2' });
    await daemon.waitTurn(s.id, (t) => t.turns.some((x) => x.promptId === 'w2' && x.state === 'completed'));
    // A restart ends the standalone agent, which can neither load nor resume.
    await daemon.restart();
    const st = await daemon.api('GET', `/session/${s.id}/status`);
    assert.equal(st.resumeReason, 'not_resumable', JSON.stringify(st));
    assert.equal(st.workspace.status, 'ready');

    const page = await browser.newPage();
    const pane = await openSession(page, daemon, s.id);
    await pane.getByTestId('not-resumable').waitFor(T);
    await pane.getByTestId('workspace-toggle').click();
    const ws = pane.getByTestId('workspace');
    await pane.locator('[data-testid=workspace][data-gate=ready]').waitFor(T);

    // Files: the tree, a directory opened, a file viewed.
    await ws.locator('[data-testid=ws-entry][data-path="notes.txt"]').waitFor(T);
    await ws.locator('[data-testid=ws-entry][data-path="docs"]').click();
    await ws.locator('[data-testid=ws-entry][data-path="docs/guide.md"]').click();
    await ws.locator('[data-testid=ws-viewer][data-path="docs/guide.md"] [data-testid=ws-file-text]', { hasText: 'Read me.' }).waitFor(T);
    await ws.locator('[data-testid=ws-entry][data-path="notes.txt"]').click();
    await ws.locator('[data-testid=ws-file-text]', { hasText: 'written by the agent' }).waitFor(T);
    await shot(page, 'workspace-01-files');

    // Changes: from the first turn's end in the transcript: that turn
    // alone (to the second's checkpoint), not what the second one made.
    await pane.locator('[data-testid=turn-end-changes][data-prompt-id=w1] [data-testid=turn-changes]').click();
    const changes = ws.getByTestId('ws-changes');
    await changes.locator('[data-testid=ws-changed-file]').first().waitFor(T);
    assert.equal(await changes.getAttribute('data-scope'), 'turn:w1');
    assert.deepEqual(await changes.locator('[data-testid=ws-changed-file]').evaluateAll((els) => els.map((e) => `${e.dataset.path}:${e.dataset.status}`)), ['notes.txt:added']);
    await changes.locator('[data-testid=ws-patch][data-path="notes.txt"][data-state=drawn]').waitFor(T);
    assert.equal(await changes.locator('[data-testid=ws-patch][data-path="notes.txt"] .d2h-ins .d2h-code-line-ctn').textContent(), 'written by the agent');
    // In total, since the first turn began: both files.
    await changes.getByTestId('ws-changes-scope').selectOption('total');
    await changes.locator('[data-testid=ws-changed-file][data-path="later.txt"]').waitFor(T);
    assert.equal(await changes.locator('[data-testid=ws-changed-file]').count(), 2);
    // Against git's HEAD: not a repository, said so.
    await changes.getByTestId('ws-changes-scope').selectOption('head');
    await changes.getByTestId('ws-changes-error').waitFor(T);
    assert.match(await changes.getByTestId('ws-changes-error').textContent(), /not a git repository/);
    await changes.getByTestId('ws-changes-scope').selectOption('turn:w1');
    await changes.locator('[data-testid=ws-changed-file][data-path="notes.txt"]').waitFor(T);
    await shot(page, 'workspace-02-changes');

    // Terminal: a shell in the session's directory, typed into and read back.
    await ws.getByTestId('ws-tab-terminal').click();
    await ws.getByTestId('ws-terminal-new').click();
    await pane.locator('[data-testid=terminal][data-state=open]').waitFor(T);
    await typeLine(page, pane, 'echo "sum=$((40+2))"; ls');
    // ls prints after the echo: wait for its output too, or the screen
    // may be read between the two.
    const text = await waitScreen(pane, /sum=42[\s\S]*notes\.txt/, 'echo, then ls in the session directory');
    assert.match(text, /later\.txt/, 'ls lists the session directory');
    await shot(page, 'workspace-03-terminal');
    // The agent still cannot resume: nothing of this needed it.
    assert.equal((await daemon.api('GET', `/session/${s.id}/status`)).isAgentRunning, false);
    assert.deepEqual(appProblems(browser.problems), []);
    await page.close();
  });

  test('a terminal survives a page reload: the same shell, its output replayed', { timeout: 60_000 }, async () => {
    const cwd = join(daemon.workspace, 'reload');
    mkdirSync(cwd, { recursive: true });
    const s = await daemon.api('POST', '/session', { agentProfileId: 'demo', cwd, title: 'Terminal reload' });
    const page = await browser.newPage();
    const pane = await openSession(page, daemon, s.id);
    await pane.getByTestId('workspace-toggle').click();
    const ws = pane.getByTestId('workspace');
    await ws.getByTestId('ws-tab-terminal').click();
    await ws.getByTestId('ws-terminal-new').click();
    await pane.locator('[data-testid=terminal][data-state=open]').waitFor(T);
    const tid = await pane.getByTestId('terminal').getAttribute('data-terminal-id');
    await typeLine(page, pane, 'MARK=kept-$((6*7)); echo "pid=$$ $MARK"');
    const before = await waitScreen(pane, /pid=\d+ kept-42/, 'first echo');
    const pid = /pid=(\d+) kept-42/.exec(before)[1];

    await page.reload();
    const again = page.locator(`[data-testid=pane][data-session-id="${s.id}"]`);
    await again.locator('[data-testid=connection][data-conn=open]').waitFor(T);
    // The panel, its tab and its terminal are picked again, and what the
    // shell printed before the reload is back on the screen.
    await again.locator(`[data-testid=terminal][data-terminal-id="${tid}"][data-state=open]`).waitFor(T);
    await waitScreen(again, new RegExp(`pid=${pid} kept-42`), 'replay after the reload');
    await typeLine(page, again, 'echo "again=$$ $MARK"');
    await waitScreen(again, new RegExp(`again=${pid} kept-42`), 'the same shell after the reload');
    await shot(page, 'workspace-04-terminal-after-reload');
    const list = await daemon.api('GET', `/session/${s.id}/terminals`);
    assert.equal(list.terminals.length, 1, 'the reload opened no second shell');
    assert.deepEqual(appProblems(browser.problems), []);
    await page.close();
  });
});

describe('Web Shell workspace panel on a detached executor', { concurrency: false }, () => {
  let daemon;
  let browser;

  before(async () => {
    daemon = await Daemon.start({ args: ['--executor', 'detached'] });
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await daemon?.stop();
  });

  test('a spinner while the host does not answer, then files; the terminal survives kill -9 of tetherd', { timeout: 90_000 }, async () => {
    const cwd = join(daemon.workspace, 'detached');
    mkdirSync(cwd, { recursive: true });
    writeFileSync(join(cwd, 'hosted.txt'), 'served by the host\n');
    const s = await daemon.api('POST', '/session', { agentProfileId: 'demo', cwd, title: 'Detached workspace' });
    await daemon.api('POST', `/session/${s.id}/prompt`, { prompt: [{ type: 'text', text: '/echo hi' }], promptId: 'd1' });
    await daemon.waitTurn(s.id, (t) => t.turns.some((x) => x.promptId === 'd1' && x.state === 'completed'));
    const page = await browser.newPage();
    const pane = await openSession(page, daemon, s.id);
    await pane.getByTestId('workspace-toggle').click();
    const ws = pane.getByTestId('workspace');
    await ws.locator('[data-testid=ws-entry][data-path="hosted.txt"]').waitFor(T);
    await ws.getByTestId('ws-tab-terminal').click();
    await ws.getByTestId('ws-terminal-new').click();
    await pane.locator('[data-testid=terminal][data-state=open]').waitFor(T);
    await typeLine(page, pane, 'echo "host-shell=$$ end"');
    const pid = /host-shell=(\d+) end/.exec(await waitScreen(pane, /host-shell=\d+ end/, 'echo'))[1];

    // tetherd killed; its host held while the next tetherd starts: the
    // panel waits with a spinner, the terminal reconnects.
    await daemon.kill9();
    const hosts = daemon.hostPids();
    assert.equal(hosts.length, 1, `one detached host: ${hosts}`);
    process.kill(hosts[0], 'SIGSTOP');
    try {
      await daemon.restart();
      await pane.locator('[data-testid=workspace][data-gate=starting]').waitFor(T);
      await ws.getByTestId('ws-starting').waitFor(T);
      await shot(page, 'workspace-05-host-starting');
    } finally {
      process.kill(hosts[0], 'SIGCONT');
    }
    await pane.locator('[data-testid=workspace][data-gate=ready]').waitFor(T);
    await ws.getByTestId('ws-tab-terminal').click();
    await pane.locator('[data-testid=terminal][data-state=open]').waitFor(T);
    await typeLine(page, pane, 'echo "still=$$ end"');
    await waitScreen(pane, new RegExp(`still=${pid} end`), 'the same shell after kill -9 of tetherd');
    await shot(page, 'workspace-06-terminal-after-restart');
    const problems = appProblems(browser.problems).filter((p) => !/WebSocket connection to .* failed/.test(p.text));
    assert.deepEqual(problems, []);
    await page.close();
  });
});
