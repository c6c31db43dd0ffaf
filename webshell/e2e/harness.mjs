// End-to-end harness: the real bin/tetherd (with its built-in demo agent)
// on a free port with a temporary data dir, and Debian's Chromium driven by
// playwright-core (never a downloaded browser).
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
export const repoRoot = resolve(here, '..', '..');
export const artifactsDir = join(here, 'artifacts');
export const TETHERD = process.env.TETHERD_BIN ?? join(repoRoot, 'bin', 'tetherd');
export const CHROMIUM = process.env.CHROMIUM_BIN ?? '/usr/bin/chromium';

export function freePort() {
  // Below the kernel's ephemeral range: a port it hands out (listen(0))
  // may be taken by an outgoing connection while the daemon is down,
  // and its restart on the same port then fails (EADDRINUSE).
  let lo = 32768;
  try {
    const first = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (first > 11000) lo = first;
  } catch {
    // not Linux: the default
  }
  const attempt = (left) =>
    new Promise((ok, fail) => {
      const srv = createServer();
      srv.unref();
      const port = left > 0 ? 10000 + Math.floor(Math.random() * (lo - 10000)) : 0;
      srv.once('error', (e) => (left > 0 ? ok(attempt(left - 1)) : fail(e)));
      srv.listen(port, '127.0.0.1', () => {
        const addr = srv.address();
        srv.close(() => ok(typeof addr === 'object' && addr ? addr.port : port));
      });
    });
  return attempt(200);
}

/** A killed process has a signalCode and no exitCode. */
const exited = (p) => p.exitCode !== null || p.signalCode !== null;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A tetherd process; restart() starts a new one on the same port and data dir. */
export class Daemon {
  constructor({ port, dataDir, token, args = [] }) {
    this.args = args;
    this.port = port;
    this.dataDir = dataDir;
    this.token = token;
    this.base = `http://127.0.0.1:${port}`;
    this.log = '';
    this.proc = undefined;
  }

  /**
   * `args` are extra `tetherd serve` flags; `agentsYaml(daemon)` returns the
   * data dir's agents.yaml (it may name `TETHERD` and the daemon's dirs);
   * `files(daemon)` returns other files of the data dir by name (a
   * hosts.yaml and its token file), written with mode 0600.
   */
  static async start({ args = [], agentsYaml, files } = {}) {
    if (!existsSync(TETHERD)) throw new Error(`${TETHERD} is missing: run make build first`);
    const root = mkdtempSync(join(tmpdir(), 'tether-e2e-'));
    const d = new Daemon({ port: await freePort(), dataDir: join(root, 'data'), token: `e2e-${Math.random().toString(36).slice(2)}`, args });
    d.root = root;
    if (agentsYaml || files) mkdirSync(d.dataDir, { recursive: true, mode: 0o700 });
    if (agentsYaml) writeFileSync(join(d.dataDir, 'agents.yaml'), agentsYaml(d));
    for (const [name, text] of Object.entries(files ? files(d) : {})) writeFileSync(join(d.dataDir, name), text, { mode: 0o600 });
    d.workspace = join(root, 'ws');
    mkdirSync(d.workspace, { recursive: true });
    writeFileSync(join(d.workspace, 'README.md'), '# Demo workspace\n\nA file for the demo agent to read.\n');
    await d.#spawn();
    return d;
  }

  async #spawn() {
    // The token goes in the environment, not on the command line (where
    // every local user would see it in ps).
    const proc = spawn(TETHERD, ['serve', '--data-dir', this.dataDir, '--addr', `127.0.0.1:${this.port}`, '--log-level', 'warn', '--executor', 'standalone', ...this.args], {
      // Terminals run /bin/sh: the tests are about the terminal, not this
      // machine's shell start-up files (an interactive bash sources
      // ~/.bashrc, which on some machines waits for a lock a killed shell
      // left behind).
      env: { ...process.env, TETHER_TOKEN: this.token, SHELL: '/bin/sh' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.proc = proc;
    const collect = (b) => {
      this.log += b.toString();
      if (this.log.length > 200_000) this.log = this.log.slice(-100_000);
    };
    proc.stdout.on('data', collect);
    proc.stderr.on('data', collect);
    const deadline = Date.now() + 15_000;
    for (;;) {
      if (exited(proc)) throw new Error(`tetherd exited (${proc.exitCode}):\n${this.log}`);
      try {
        // The banner is written before the daemon serves, but its pipe's
        // data can reach us after the health answer does: wait for both.
        const r = await fetch(`${this.base}/health`);
        if (r.ok && this.log.includes(`${this.base}/shell/#token=`)) break;
      } catch {
        // not up yet
      }
      if (Date.now() > deadline) throw new Error(`tetherd did not become healthy:\n${this.log}`);
      await sleep(50);
    }
    // stderr is a pipe, not a terminal: the banner names the shell URL with
    // a placeholder, and the token itself never reaches the log.
    if (!this.log.includes(`${this.base}/shell/#token=<token>`)) throw new Error(`tetherd did not print the shell URL:\n${this.log}`);
    if (this.log.includes(this.token)) throw new Error(`tetherd printed its token to a log that is not a terminal:\n${this.log}`);
  }

  get shellUrl() {
    return `${this.base}/shell/#token=${this.token}`;
  }

  /** SIGKILL: no shutdown, no chance to finish anything. */
  async kill9() {
    const p = this.proc;
    if (!p || exited(p)) return;
    const done = new Promise((r) => p.once('exit', r));
    p.kill('SIGKILL');
    await done;
  }

  async restart() {
    await this.kill9();
    await this.#spawn();
  }

  async stop() {
    const p = this.proc;
    if (p && !exited(p)) {
      const done = new Promise((r) => p.once('exit', r));
      p.kill('SIGTERM');
      await Promise.race([done, sleep(5000)]);
      if (!exited(p)) p.kill('SIGKILL');
    }
    await this.stopHosts();
    if (this.root) rmSync(this.root, { recursive: true, force: true });
  }

  /**
   * The pid of the detached executor host of this daemon's data dir, in a
   * list (empty when none runs). It outlives the daemon (its own session,
   * no parent to wait for it) and its command line names no path, so it
   * is found by <data-dir>/host/host.lock, which the running host holds
   * and which names it: "<pid> <start> <dev>:<ino>", the start time of
   * /proc/<pid>/stat and the file's own device and inode, so that neither
   * a pid reused after the host ended nor a copied file is taken for it
   * (internal/host/holder.go).
   */
  hostPids() {
    const lock = join(this.dataDir, 'host', 'host.lock');
    try {
      const [pid, start, file, ...rest] = readFileSync(lock, 'utf8').trim().split(/\s+/);
      const st = statSync(lock, { bigint: true });
      if (rest.length || file !== `${st.dev}:${st.ino}`) return [];
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 1).trim().split(/\s+/); // fields[0] is the state
      if (fields[0] === 'Z' || fields[0] === 'X' || fields[19] !== start) return [];
      return [Number(pid)];
    } catch {
      return []; // no lock file, or the host is gone
    }
  }

  /**
   * SIGTERM the detached hosts (a clean tetherd shutdown leaves them
   * running with their sessions, and they would linger for minutes), then
   * SIGKILL what is left after 5 s. A host stops its agents as it exits.
   */
  async stopHosts() {
    const alive = (pid) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    const pids = this.hostPids();
    for (const pid of pids) process.kill(pid, 'SIGTERM');
    const deadline = Date.now() + 5000;
    while (pids.some(alive) && Date.now() < deadline) await sleep(50);
    for (const pid of pids.filter(alive)) process.kill(pid, 'SIGKILL');
  }

  /**
   * The session's durable events of `types` (all when empty), read from
   * the start of its log with follow=false: [{ id, type, data }].
   */
  async events(sessionId, types = []) {
    const q = new URLSearchParams({ follow: 'false', ...(types.length ? { types: types.join(',') } : {}) });
    const r = await fetch(`${this.base}/session/${sessionId}/events?${q}`, { headers: { Authorization: `Bearer ${this.token}` } });
    if (!r.ok) throw new Error(`GET /session/${sessionId}/events: ${r.status} ${await r.text()}`);
    const out = [];
    for (const frame of (await r.text()).split('\n\n')) {
      const f = {};
      for (const line of frame.split('\n')) {
        const i = line.indexOf(': ');
        if (i > 0) f[line.slice(0, i)] = line.slice(i + 2);
      }
      if (f.id && f.event && f.data) out.push({ id: f.id, type: f.event, data: JSON.parse(f.data) });
    }
    return out;
  }

  async api(method, path, body) {
    const r = await fetch(`${this.base}${path}`, {
      method,
      headers: { Authorization: `Bearer ${this.token}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await r.text();
    let json;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = text;
    }
    if (!r.ok && r.status !== 409) throw new Error(`${method} ${path}: ${r.status} ${text}`);
    return json;
  }

  /** Waits until the session's last turn reaches one of `states`. */
  async waitTurn(sessionId, pred, timeoutMs = 15_000) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const t = await this.api('GET', `/session/${sessionId}/transcript`);
      if (pred(t)) return t;
      if (Date.now() > deadline) throw new Error(`timed out waiting on session ${sessionId}: ${JSON.stringify(t.turns)}`);
      await sleep(100);
    }
  }
}

/** Chromium with a fresh profile; records console errors and page errors. */
export async function launchBrowser({ width = 1360, height = 860 } = {}) {
  const profile = mkdtempSync(join(tmpdir(), 'tether-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width, height },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-quic',
    ],
  });
  const problems = [];
  const watch = (page) => {
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') problems.push({ kind: m.type(), text: m.text(), url: page.url() });
    });
    page.on('pageerror', (e) => problems.push({ kind: 'pageerror', text: String(e && e.stack ? e.stack : e) }));
  };
  context.on('page', watch);
  for (const p of context.pages()) watch(p);
  return {
    context,
    problems,
    async newPage() {
      const existing = context.pages().find((p) => p.url() === 'about:blank');
      return existing ?? context.newPage();
    },
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/**
 * Console problems other than the browser's own network lines, which it
 * prints for every failed request (the daemon being killed on purpose, a
 * 409 decline of a losing Continue click). Page errors always count.
 */
export function appProblems(problems) {
  return problems.filter((p) => p.kind === 'pageerror' || !/Failed to load resource|net::ERR_/.test(p.text));
}

/**
 * Opens the Web Shell on page, picks session id in the sidebar and waits
 * until its pane is connected; returns the pane.
 */
export async function openSession(page, daemon, id, T = { timeout: 20_000 }) {
  await page.goto(daemon.shellUrl);
  const row = page.locator(`[data-testid=session-row][data-session-id="${id}"] .srow__open`);
  await row.waitFor(T);
  await row.click();
  const pane = page.locator(`[data-testid=pane][data-session-id="${id}"]`);
  await pane.locator('[data-testid=connection][data-conn=open]').waitFor(T);
  return pane;
}

export async function shot(page, name) {
  mkdirSync(artifactsDir, { recursive: true });
  await page.screenshot({ path: join(artifactsDir, `${name}.png`) });
}
