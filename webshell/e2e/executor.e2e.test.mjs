// Executors in the Web Shell against the real tetherd started with
// --executor detached: the new-session form offers standalone, detached and
// the configured remote hosts; a detached session's badge says where it
// runs; kill -9 of tetherd mid-turn and a restart leave the turn running on
// the detached host, and the page reconnects and shows it complete, with no
// interruption banner and every chunk once, in order.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { appProblems, Daemon, freePort, launchBrowser, shot } from './harness.mjs';

const T = { timeout: 15_000 };
// The whole /stream turn, through the host, the daemon, a restart and the
// browser, on a shared 2-core machine.
const LONG = { timeout: 90_000 };
const CHUNKS = 3000;

let daemon;
let browser;

before(async () => {
  // A remote host that is never reachable: the form lists it all the same.
  const remotePort = await freePort();
  daemon = await Daemon.start({
    args: ['--executor', 'detached'],
    files: () => ({
      'gpu-box.token': 'not-a-real-token\n',
      'hosts.yaml': `hosts:\n  - name: gpu-box\n    url: tls://127.0.0.1:${remotePort}\n    tokenFile: gpu-box.token\n    pinSha256: ${'0'.repeat(64)}\n`,
    }),
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  // Stops the detached host too (its command line names the data dir).
  await daemon?.stop();
});

const paneOf = (page, sessionId) => page.locator(`[data-testid=pane][data-session-id="${sessionId}"]`);

async function waitConnected(pane) {
  await pane.locator('[data-testid=connection][data-conn=open]').waitFor(T);
}

/** The chunk numbers of a /stream reply, in the order shown. */
const chunkNumbers = (text) => [...text.matchAll(/chunk (\d+)/g)].map((m) => Number(m[1]));

describe('Web Shell with the detached executor', { concurrency: false }, () => {
  let page;
  let chat;

  test('the form offers the executors; a session created on detached says so', LONG, async () => {
    page = await browser.newPage();
    await page.goto(daemon.shellUrl);
    await page.getByTestId('new-session').click();
    const dialog = page.getByRole('dialog', { name: 'New session' });
    await dialog.waitFor(T);
    const runsOn = dialog.getByRole('combobox', { name: /^Runs on/ });
    // The remote host arrives with GET /executors.
    await runsOn.locator('option[value="gpu-box"]').waitFor({ state: 'attached', ...T });
    const options = await runsOn.locator('option').evaluateAll((os) => os.map((o) => [o.value, o.textContent]));
    assert.deepEqual(
      options.map(([v]) => v),
      ['', 'standalone', 'detached', 'gpu-box'],
      'default, standalone, detached and the remote host (the local host is the detached entry)',
    );
    assert.match(options[3][1], /^gpu-box \(remote, (not reached yet|unreachable|reconnecting)\)$/);
    assert.equal(await runsOn.inputValue(), '', 'the daemon default unless the user picks');

    await dialog.getByRole('radio', { name: /Demo agent/ }).check();
    await dialog.getByRole('textbox', { name: 'Task title' }).fill('Detached demo');
    await dialog.getByRole('textbox', { name: 'Working directory' }).fill(daemon.workspace);
    await runsOn.selectOption('detached');
    await shot(page, 'executor-01-new-session');
    const created = page.waitForRequest((r) => r.method() === 'POST' && new URL(r.url()).pathname === '/session');
    await dialog.getByRole('button', { name: 'Start session' }).click();
    assert.equal((await created).postDataJSON().executor, 'detached');
    await dialog.waitFor({ state: 'detached', ...T });

    const pane = page.locator('[data-testid=pane]').first();
    chat = { id: await pane.getAttribute('data-session-id'), pane };
    await waitConnected(pane);
    const badge = pane.locator('[data-testid=executor][data-exec=ready][data-runtime=detached]');
    await badge.waitFor(T);
    assert.equal(await badge.getAttribute('data-host'), 'local');
    assert.equal(await badge.getByTestId('executor-where').textContent(), 'detached');
    const s = await daemon.api('GET', `/session/${chat.id}`);
    assert.deepEqual([s.executor.runtime, s.executor.host], ['detached', 'local']);
    assert.equal(daemon.hostPids().length, 1, 'one detached host runs');
    // The agent runs in its sandbox on the host, and the pane says so.
    const sandbox = pane.locator('[data-testid=sandbox]');
    await sandbox.waitFor(T);
    assert.equal(await sandbox.getAttribute('data-sandbox'), 'on');
    assert.equal(await sandbox.textContent(), 'Sandboxed');
    const st = await daemon.api('GET', `/session/${chat.id}/status`);
    assert.deepEqual([st.sandbox.state, st.sandbox.mode, st.sandbox.network], ['on', 'auto', 'all']);
    await shot(page, 'executor-02-detached-ready');
  });

  test('kill -9 of tetherd mid-turn, restart: the turn goes on on the host and completes, no banner', LONG, async (t) => {
    const { pane, id } = chat;
    const box = pane.getByRole('textbox', { name: 'Message' });
    await box.fill(`/stream ${CHUNKS} 100 20`);
    await box.press('Enter');
    const reply = pane.locator('[data-testid=agent-message]', { hasText: 'chunk 50' });
    await reply.waitFor(T);
    await daemon.kill9();
    await pane.locator('[data-testid=connection][data-conn=disconnected]').waitFor(T);
    assert.equal(await pane.getByTestId('recovery-banner').count(), 0, 'no banner while disconnected');
    await shot(page, 'executor-03-daemon-killed');
    const hostPids = daemon.hostPids();
    assert.equal(hostPids.length, 1, 'the detached host outlived tetherd');

    // The host is held (SIGSTOP) while tetherd restarts: the daemon cannot
    // reach it, so the session shows reconnecting for as long as it is held.
    process.kill(hostPids[0], 'SIGSTOP');
    let held = true;
    t.after(() => held && process.kill(hostPids[0], 'SIGCONT'));
    await daemon.restart();
    // Nobody touches the page: it reconnects by itself.
    await waitConnected(pane);
    const waiting = pane.locator('[data-testid=executor][data-exec=reconnecting][data-runtime=detached]');
    await waiting.waitFor(T);
    const amber = waiting.locator('.badge--warn');
    assert.match(await amber.getAttribute('title'), /reconnecting\. The agent keeps running there and the turn goes on/);
    assert.equal(await amber.locator('.spinner').count(), 1);
    assert.equal(await pane.getByTestId('recovery-banner').count(), 0, 'no banner while the host is unreachable');
    assert.equal(await pane.getByTestId('needs-resume').count(), 0, 'nothing to resume');
    await shot(page, 'executor-04-reconnecting');
    process.kill(hostPids[0], 'SIGCONT');
    held = false;
    await pane.locator('[data-testid=agent-message]', { hasText: `chunk ${CHUNKS}` }).waitFor({ timeout: 60_000 });
    const tr = await daemon.waitTurn(id, (x) => x.turns.at(-1).state !== 'running' && x.turns.at(-1).state !== 'queued', 60_000);
    const turn = tr.turns.at(-1);
    assert.equal(turn.state, 'completed');
    await pane.locator('[data-testid=executor][data-exec=ready][data-runtime=detached]').waitFor(T);
    assert.deepEqual(daemon.hostPids(), hostPids, 'the same host, found again');

    // The restart happened mid-turn: the daemon marked the executor
    // reconnecting between the turn's start and its end, and nothing
    // interrupted it.
    const log = await daemon.events(id, ['turn.started', 'turn.completed', 'turn.interrupted', 'session.executor_status', 'session.recovery_changed']);
    // No client was ever told there is something to recover.
    const recoveries = log.filter((e) => e.type === 'session.recovery_changed').map((e) => e.data.recovery.kind);
    assert.ok(recoveries.length > 0 && recoveries.every((k) => k === 'clean'), `every recovery summary was clean: ${recoveries.join(' ')}`);
    const mine = log.filter((e) => e.data.promptId === turn.promptId || e.type === 'session.executor_status');
    const kinds = mine.map((e) => (e.type === 'session.executor_status' ? e.data.status : e.type));
    const started = kinds.indexOf('turn.started');
    const reconnecting = kinds.indexOf('reconnecting', started);
    assert.ok(started >= 0 && reconnecting > started && kinds.indexOf('turn.completed') > reconnecting, `the restart fell inside the turn: ${kinds.join(' ')}`);
    assert.ok(!kinds.includes('turn.interrupted'), 'no turn.interrupted');
    assert.ok(mine.filter((e) => e.type === 'session.executor_status').every((e) => e.data.runtime === 'detached' && e.data.host === 'local'));

    // Every chunk once, in order: in the transcript and on the page.
    const want = Array.from({ length: CHUNKS }, (_, i) => i + 1);
    const agentText = tr.messages.filter((m) => m.promptId === turn.promptId && m.role === 'agent').map((m) => m.text).join('');
    assert.deepEqual(chunkNumbers(agentText), want, 'the transcript has every chunk exactly once, in order');
    const shown = (await pane.locator('[data-testid=agent-message]').allInnerTexts()).join('\n');
    assert.deepEqual(chunkNumbers(shown), want, 'the page shows every chunk exactly once, in order');
    assert.equal(await pane.getByTestId('recovery-banner').count(), 0, 'no interruption banner');
    assert.equal(await pane.locator('[data-testid=turn-end][data-turn-state=interrupted]').count(), 0);
    await shot(page, 'executor-05-turn-completed');
  });

  test('no console errors from the app', () => {
    assert.deepEqual(appProblems(browser.problems), []);
  });
});
