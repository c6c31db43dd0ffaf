// Rewind, fork and hand-off in Chromium against the real daemon and demo
// agent (issue 32, docs/rewind.md): "Rewind to here" previews the file
// changes (a dry run) and names the user's own edits before anything
// changes; the rewound turns are greyed behind a fold; Undo gives the files
// back; "Fork from here" opens the fork beside, its origin linked both
// ways; "Continue with another agent…" hands the session off in the same
// directory; a fork of a session in no git repository asks for the
// directory its files go to. The files are checked on disk, not only on
// the page.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { scan } from './axe.mjs';
import { appProblems, Daemon, launchBrowser, openSession, shot } from './harness.mjs';

const T = { timeout: 20_000 };

let daemon;
let browser;
let page;
let repo;

const git = (...args) =>
  execFileSync('git', args, {
    cwd: repo,
    env: { ...process.env, GIT_AUTHOR_NAME: 'e2e', GIT_AUTHOR_EMAIL: 'e2e@localhost', GIT_COMMITTER_NAME: 'e2e', GIT_COMMITTER_EMAIL: 'e2e@localhost', GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' },
  });

before(async () => {
  daemon = await Daemon.start();
  repo = join(daemon.root, 'repo');
  mkdirSync(repo, { recursive: true });
  writeFileSync(join(repo, 'README.md'), '# A repository to rewind\n');
  git('init', '-q', '-b', 'main');
  git('add', '.');
  git('commit', '-q', '-m', 'first');
  browser = await launchBrowser({ width: 1360, height: 860 });
  page = await browser.newPage();
});

after(async () => {
  await browser?.close();
  await daemon?.stop();
});

async function send(pane, text) {
  const box = pane.getByRole('textbox', { name: 'Message' });
  await box.click();
  await box.fill(text);
  await box.press('Enter');
}

const read = (dir, name) => (existsSync(join(dir, name)) ? readFileSync(join(dir, name), 'utf8') : undefined);

describe('Web Shell rewind, fork and hand-off', { concurrency: false }, () => {
  test('rewind with a preview, the rewound turns folded, undo, fork beside, hand-off', { timeout: 120_000 }, async (t) => {
    const s = await daemon.api('POST', '/session', { agentProfileId: 'demo', cwd: repo, title: 'Write the notes' });
    const pane = await openSession(page, daemon, s.id);
    await pane.locator('[data-testid=executor][data-exec=ready]').waitFor(T);
    for (const [i, text] of ['/tool write notes.txt first draft', '/tool write notes.txt second draft', '/tool write extra.txt an extra file'].entries()) {
      await send(pane, text);
      await daemon.waitTurn(s.id, (t) => t.turns[i]?.state === 'completed');
    }
    const [t1, t2, t3] = (await daemon.api('GET', `/session/${s.id}/transcript`)).turns.map((t) => t.promptId);
    // The user's own edit, outside any turn.
    writeFileSync(join(repo, 'mine.txt'), 'my own notes\n');

    // Rewind to the end of the first turn: the preview comes first.
    const first = pane.locator(`[data-testid=turn-branch][data-prompt-id="${t1}"]`);
    await first.getByTestId('rewind-here').click();
    const dialog = page.getByTestId('rewind-dialog');
    await dialog.getByTestId('rewind-preview').waitFor(T);
    const rows = await dialog.locator('[data-testid=rewind-preview] li').evaluateAll((els) => els.map((e) => `${e.dataset.path}:${e.dataset.status}`));
    assert.deepEqual(rows.sort(), ['extra.txt:deleted', 'mine.txt:deleted', 'notes.txt:modified']);
    assert.match(await dialog.getByTestId('rewind-user-changed').textContent(), /1 of them were changed outside any turn/);
    assert.equal(read(repo, 'notes.txt'), 'second draft', 'the preview changed nothing');
    await shot(page, 'rewind-01-preview');
    assert.deepEqual(await scan(t, page, 'the rewind preview'), []);
    await dialog.getByTestId('rewind-confirm').click();
    await dialog.waitFor({ state: 'detached', ...T });
    assert.equal(read(repo, 'notes.txt'), 'first draft');
    assert.equal(read(repo, 'extra.txt'), undefined);
    assert.equal(read(repo, 'mine.txt'), undefined);

    // The later turns stay, greyed behind their fold; the rewind can be undone.
    const fold = pane.getByTestId('rewound-fold');
    await fold.waitFor(T);
    assert.match(await fold.textContent(), /2 rewound turns/);
    assert.equal(await pane.getByTestId('rewound-item').count(), 0, 'folded at first');
    await fold.getByTestId('rewound-toggle').click();
    await pane.getByTestId('rewound-item').first().waitFor(T);
    const greyed = await pane.locator('[data-testid=rewound-item] [data-testid=user-message]').evaluateAll((els) => els.map((e) => e.dataset.promptId));
    assert.deepEqual(greyed, [t2, t3]);
    await pane.getByTestId('undo-rewind').waitFor(T);
    await shot(page, 'rewind-02-rewound-turns');
    assert.deepEqual(await scan(t, page, 'rewound turns'), []);
    const turns = (await daemon.api('GET', `/session/${s.id}/transcript`)).turns;
    assert.deepEqual(
      turns.map((t) => [t.promptId, t.rewound ?? false]),
      [
        [t1, false],
        [t2, true],
        [t3, true],
      ],
    );

    await pane.getByTestId('undo-rewind-button').click();
    await fold.waitFor({ state: 'detached', ...T });
    assert.equal(read(repo, 'notes.txt'), 'second draft');
    assert.equal(read(repo, 'extra.txt'), 'an extra file');
    assert.equal(read(repo, 'mine.txt'), 'my own notes\n');

    // Fork from the first turn: the fork opens beside, linked both ways.
    await first.getByTestId('fork-here').click();
    const forkPane = page.locator('[data-testid=pane]').nth(1);
    await forkPane.getByTestId('fork-origin').waitFor(T);
    const fid = await forkPane.getAttribute('data-session-id');
    assert.notEqual(fid, s.id);
    const fork = await daemon.api('GET', `/session/${fid}`);
    assert.deepEqual(fork.forkedFrom, { sessionId: s.id, promptId: t1 });
    assert.equal(read(fork.cwd, 'notes.txt'), 'first draft');
    assert.equal(read(fork.cwd, 'extra.txt'), undefined);
    assert.match(await forkPane.getByTestId("fork-origin").textContent(), /Forked from Write the notes at turn/);
    assert.equal(fork.title, "Write the notes (fork)");
    // Briefed by history injection with its first prompt: nothing is lost.
    assert.equal(await forkPane.getByText('could not restore its memory').count(), 0);
    await first.getByTestId('fork-link').waitFor(T);
    assert.equal(await first.getByTestId('fork-link').getAttribute('data-session-id'), fid);
    await shot(page, 'rewind-03-fork');

    // Continue with another agent, from the latest turn.
    const last = pane.locator(`[data-testid=turn-branch][data-prompt-id="${t3}"]`);
    assert.equal(await first.getByTestId('handoff').count(), 0, 'only the latest turn hands off');
    await last.getByTestId('handoff').click();
    const hand = page.getByTestId('handoff-dialog');
    await hand.waitFor(T);
    await shot(page, 'rewind-04-handoff-dialog');
    assert.deepEqual(await scan(t, page, 'the hand-off dialog'), []);
    await hand.getByTestId('handoff-confirm').click();
    await hand.waitFor({ state: 'detached', ...T });
    await last.getByTestId('fork-link').waitFor(T);
    const hid = await last.getByTestId('fork-link').getAttribute('data-session-id');
    const handed = await daemon.api('GET', `/session/${hid}`);
    assert.equal(handed.cwd, repo);
    assert.equal(handed.forkedFrom?.handoff, true);
    await page.locator(`[data-testid=pane][data-session-id="${hid}"] [data-testid=fork-origin]`).waitFor(T);
    await shot(page, 'rewind-05-handoff');
    assert.deepEqual(await scan(t, page, 'three panes: origin, fork, hand-off'), []);
    assert.deepEqual(appProblems(browser.problems), []);
  });

  test('a fork of a session in no git repository asks for its directory', { timeout: 60_000 }, async (t) => {
    const plain = join(daemon.root, 'plain');
    mkdirSync(plain, { recursive: true });
    const s = await daemon.api('POST', '/session', { agentProfileId: 'demo', cwd: plain, title: 'Plain notes' });
    const pane = await openSession(page, daemon, s.id);
    await pane.locator('[data-testid=executor][data-exec=ready]').waitFor(T);
    await send(pane, '/tool write notes.txt in a plain directory');
    await daemon.waitTurn(s.id, (t) => t.turns[0]?.state === 'completed');
    const [t1] = (await daemon.api('GET', `/session/${s.id}/transcript`)).turns.map((t) => t.promptId);
    await pane.locator(`[data-testid=turn-branch][data-prompt-id="${t1}"]`).getByTestId('fork-here').click();
    // No worktree to be had: the dialog asks where the files go, and
    // offers a sibling of the session's directory.
    const dialog = page.getByTestId('forkdir-dialog');
    await dialog.waitFor(T);
    const input = dialog.getByTestId('forkdir-input');
    assert.match(await input.inputValue(), /\/plain-fork-/);
    await shot(page, 'rewind-06-fork-directory');
    assert.deepEqual(await scan(t, page, 'the fork directory dialog'), []);
    // A directory with files in it is refused, and the dialog says why.
    await input.fill(plain);
    await dialog.getByTestId('forkdir-confirm').click();
    await dialog.getByRole('alert').waitFor(T);
    assert.match(await dialog.getByRole('alert').textContent(), /empty/);
    const target = join(daemon.root, 'plain-fork');
    await input.fill(target);
    await dialog.getByTestId('forkdir-confirm').click();
    await dialog.waitFor({ state: 'detached', ...T });
    const forkPane = page.locator(`[data-testid=pane]:has([data-testid=fork-origin][data-session-id="${s.id}"])`);
    await forkPane.waitFor(T);
    const fork = await daemon.api('GET', `/session/${await forkPane.getAttribute('data-session-id')}`);
    assert.equal(fork.cwd, target);
    assert.deepEqual(fork.forkedFrom, { sessionId: s.id, promptId: t1 });
    assert.equal(read(target, 'notes.txt'), 'in a plain directory');
    assert.deepEqual(appProblems(browser.problems), []);
  });
});
