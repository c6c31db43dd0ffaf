// @tether/client as a third party gets it: `npm pack` the SDK, check what the
// tarball holds, install it into a fresh scratch project outside the
// repository (its own package.json, exact pins, the npm registry), compile
// the example with TypeScript strict, run it with Node against a real
// tetherd, bundle it for the browser with Vite and run the bundle in
// Chromium against the same daemon (CORS allowed for the page's origin).
//
//   TETHERD_BIN=$PWD/bin/tetherd node --test test/pack/     (make test-pack)
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { extname, join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Daemon, freePort, launchBrowser, repoRoot } from '../../webshell/e2e/harness.mjs';

const run = promisify(execFile);
const here = fileURLToPath(new URL('.', import.meta.url));
const sdkDir = join(repoRoot, 'client-ts');
const sdkPkg = JSON.parse(readFileSync(join(sdkDir, 'package.json'), 'utf8'));

/** Runs a command, failing with its output. */
async function sh(cmd, args, opts = {}) {
  try {
    return await run(cmd, args, { maxBuffer: 64 << 20, ...opts });
  } catch (err) {
    throw new Error(`${cmd} ${args.join(' ')} failed:\n${err.stdout ?? ''}\n${err.stderr ?? ''}`, { cause: err });
  }
}

let scratch, tarball, packed, project, daemon, pageServer, pageOrigin;

before(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'tether-pack-'));
  // npm pack runs prepack: the LICENSE copy and the tsc build.
  const { stdout } = await sh('npm', ['pack', '--json', '--pack-destination', scratch], { cwd: sdkDir });
  packed = JSON.parse(stdout)[0];
  tarball = join(scratch, packed.filename);

  project = join(scratch, 'project');
  await sh('mkdir', ['-p', project]);
  for (const f of readdirSync(join(here, 'project'))) {
    if (f !== 'package.json.tmpl') copyFileSync(join(here, 'project', f), join(project, f));
  }
  writeFileSync(
    join(project, 'package.json'),
    readFileSync(join(here, 'project', 'package.json.tmpl'), 'utf8').replace('@TARBALL@', tarball),
  );
  // A project of its own: not a workspace of this repository, no lockfile of ours.
  await sh('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--no-package-lock'], { cwd: project });

  // The browser page's origin must exist before the daemon, which allows it by CORS.
  const port = await freePort();
  pageOrigin = `http://127.0.0.1:${port}`;
  daemon = await Daemon.start({ args: ['--cors-origins', pageOrigin] });
});

after(async () => {
  await new Promise((r) => (pageServer ? pageServer.close(r) : r()));
  await daemon?.stop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

test('the tarball holds the build, types, licence and readme, and no tests or sources', () => {
  const files = packed.files.map((f) => f.path);
  for (const want of ['package.json', 'LICENSE', 'README.md', 'dist/index.js', 'dist/index.d.ts', 'dist/gen/index.d.ts', 'dist/sse.d.ts']) {
    assert.ok(files.includes(want), `tarball lacks ${want}: ${files.join(', ')}`);
  }
  const unwanted = files.filter((f) => /^(src|test)\/|\.test\.|\.map$|tsbuildinfo|tsconfig|vitest/.test(f));
  assert.deepEqual(unwanted, [], 'files a consumer does not need');
  assert.equal(readFileSync(join(repoRoot, 'LICENSE'), 'utf8'), readFileSync(join(sdkDir, 'LICENSE'), 'utf8'));
  const installed = JSON.parse(readFileSync(join(project, 'node_modules/@tether/client/package.json'), 'utf8'));
  assert.equal(installed.license, 'Apache-2.0');
  assert.equal(installed.private, undefined, 'a private package cannot be published');
  assert.equal(installed.version, sdkPkg.version);
  console.log(`# @tether/client ${packed.version}: ${packed.files.length} files, ${packed.size} B packed, ${packed.unpackedSize} B unpacked`);
});

test('the example type-checks under strict TypeScript and runs in Node against tetherd', async () => {
  await sh(join(project, 'node_modules/.bin/tsc'), ['-p', 'tsconfig.json'], { cwd: project });
  const { stdout } = await sh(process.execPath, ['out/example.js'], {
    cwd: project,
    env: { ...process.env, TETHER_URL: daemon.base, TETHER_TOKEN: daemon.token, TETHER_CWD: daemon.workspace },
  });
  const r = JSON.parse(stdout);
  assert.equal(r.state, 'turn.completed');
  assert.equal(r.daemonApiVersion, r.apiVersion);
  assert.equal(r.apiVersion, sdkPkg.version);
  assert.ok(r.reply.length > 0, `the demo agent replied nothing: ${stdout}`);
  assert.ok(r.agents > 0);
});

const types = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css' };

test('the example bundles with Vite and runs in Chromium against tetherd', async () => {
  await sh(join(project, 'node_modules/.bin/tsc'), ['-p', 'tsconfig.browser.json'], { cwd: project });
  await sh(join(project, 'node_modules/.bin/vite'), ['build', '--logLevel', 'warn', '--outDir', 'web'], { cwd: project });
  const web = join(project, 'web');
  pageServer = createServer((req, res) => {
    const path = resolve(web, '.' + (new URL(req.url, pageOrigin).pathname.replace(/\/$/, '/index.html')));
    if (!path.startsWith(web)) return res.writeHead(404).end();
    try {
      const body = readFileSync(path);
      res.writeHead(200, { 'Content-Type': types[extname(path)] ?? 'application/octet-stream' }).end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise((r) => pageServer.listen(Number(new URL(pageOrigin).port), '127.0.0.1', r));

  const browser = await launchBrowser();
  try {
    const page = await browser.newPage();
    const hash = new URLSearchParams({ base: daemon.base, token: daemon.token, cwd: daemon.workspace });
    await page.goto(`${pageOrigin}/#${hash}`);
    await page.waitForFunction(() => window.__result !== undefined, undefined, { timeout: 30_000 });
    const r = await page.evaluate(() => window.__result);
    assert.equal(r.error, undefined, `the browser example failed: ${r.error}\n${daemon.log}`);
    assert.equal(r.state, 'turn.completed');
    assert.equal(r.daemonApiVersion, sdkPkg.version);
    assert.ok(r.reply.length > 0);
    const problems = browser.problems.filter((p) => p.kind === 'pageerror');
    assert.deepEqual(problems, []);
  } finally {
    await browser.close();
  }
});
