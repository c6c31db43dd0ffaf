// A real tetherd process for integration tests: free port, temp data dir,
// fixed token; restart keeps data dir and port; kill9 is a crash.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const TETHERD_BIN = process.env.TETHERD_BIN || resolve(here, '../../../bin/tetherd');
export const CLIENT_DIR = resolve(here, '../..');

export function freePort(): Promise<number> {
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
  const attempt = (left: number): Promise<number> =>
    new Promise<number>((ok, fail) => {
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

export async function until<T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  let lastErr: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v as T;
    } catch (e) {
      lastErr = e;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${lastErr ? `: ${String(lastErr)}` : ''}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

export class Daemon {
  readonly token = 'test-token';
  dataDir = '';
  cwd = '';
  port = 0;
  log = '';
  #proc: ChildProcess | undefined;
  #exited: Promise<void> | undefined;

  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  static async start(): Promise<Daemon> {
    if (!existsSync(TETHERD_BIN)) {
      throw new Error(`tetherd binary not found at ${TETHERD_BIN}: run \`make build\` (or set TETHERD_BIN)`);
    }
    const d = new Daemon();
    d.dataDir = await mkdtemp(join(tmpdir(), 'tether-ts-data-'));
    d.cwd = await mkdtemp(join(tmpdir(), 'tether-ts-cwd-'));
    await writeFile(join(d.cwd, 'README.md'), '# Fixture\n\nA file for the demo agent to read.\n');
    d.port = await freePort();
    await d.boot();
    return d;
  }

  async boot(): Promise<void> {
    // Terminals run /bin/sh: the tests are about the terminal, not this
    // machine's shell start-up files (an interactive bash sources ~/.bashrc,
    // which on some machines waits for a lock a killed shell left behind).
    const proc = spawn(
      TETHERD_BIN,
      ['serve', '--data-dir', this.dataDir, '--addr', `127.0.0.1:${this.port}`, '--token', this.token, '--log-level', 'warn', '--executor', 'standalone'],
      { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, SHELL: '/bin/sh' } },
    );
    this.#proc = proc;
    proc.stderr?.on('data', (b: Buffer) => {
      this.log += b.toString();
      if (this.log.length > 200_000) this.log = this.log.slice(-100_000);
    });
    this.#exited = new Promise((r) => proc.once('exit', () => r()));
    await until('tetherd to answer /health', async () => {
      if (proc.exitCode !== null) throw new Error(`tetherd exited ${proc.exitCode}:\n${this.log}`);
      try {
        return (await fetch(`${this.baseUrl}/health`)).ok;
      } catch {
        return false;
      }
    });
  }

  get pid(): number | undefined {
    return this.#proc?.pid;
  }

  /** SIGKILL: no chance to clean up (a crash). */
  async kill9(): Promise<void> {
    const p = this.#proc;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    p.kill('SIGKILL');
    await this.#exited;
  }

  /** SIGTERM, then SIGKILL after 10 s. */
  async stop(): Promise<void> {
    const p = this.#proc;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    p.kill('SIGTERM');
    const t = setTimeout(() => p.kill('SIGKILL'), 10_000);
    await this.#exited;
    clearTimeout(t);
  }

  async restart(opts: { crash?: boolean } = {}): Promise<void> {
    if (opts.crash) await this.kill9();
    else await this.stop();
    // The port was ours a moment ago; retry a few times if the OS holds it.
    let lastErr: unknown;
    for (let i = 0; i < 5; i++) {
      try {
        await this.boot();
        return;
      } catch (e) {
        lastErr = e;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    throw lastErr;
  }

  async dispose(): Promise<void> {
    await this.stop();
    await rm(this.dataDir, { recursive: true, force: true });
    await rm(this.cwd, { recursive: true, force: true });
  }
}
