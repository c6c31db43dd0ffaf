// The SDK's version follows the contract, and connect() refuses a daemon
// serving an incompatible contract with an error naming both versions.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { API_VERSION, apiCompatible, TetherClient, TetherNetworkError, TetherVersionError } from '../src/index.js';

const read = (rel: string) => readFileSync(new URL(rel, import.meta.url), 'utf8');

function daemon(health: unknown): typeof fetch {
  return (async () =>
    new Response(JSON.stringify(health), { status: 200, headers: { 'Content-Type': 'application/json' } })) as typeof fetch;
}

describe('versioning', () => {
  it('API_VERSION is the package version and the contract info.version', () => {
    const pkg = JSON.parse(read('../package.json')) as { version: string };
    const contract = /^info:\n(?:  .*\n)*?  version: *(\S+)/m.exec(read('../../api/openapi.yaml'))?.[1];
    expect(pkg.version).toBe(API_VERSION);
    expect(contract).toBe(API_VERSION);
  });

  it.each([
    { name: 'same version', sdk: '0.1.0', daemon: '0.1.0', want: true },
    { name: '0.x patch differs', sdk: '0.1.0', daemon: '0.1.7', want: true },
    { name: '0.x minor differs', sdk: '0.1.0', daemon: '0.2.0', want: false },
    { name: 'newer daemon minor', sdk: '1.2.0', daemon: '1.3.0', want: true },
    { name: 'older daemon minor', sdk: '1.2.0', daemon: '1.1.0', want: false },
    { name: 'major differs', sdk: '1.0.0', daemon: '2.0.0', want: false },
    { name: 'not a version', sdk: '0.1.0', daemon: '', want: false },
  ])('apiCompatible: $name', ({ sdk, daemon: d, want }) => {
    expect(apiCompatible(sdk, d)).toBe(want);
  });

  it('connect resolves against a daemon serving the same API', async () => {
    const c = await TetherClient.connect({
      baseUrl: 'http://tether.test',
      token: 't',
      fetch: daemon({ status: 'ok', version: '9.9.9', apiVersion: API_VERSION }),
    });
    expect(c).toBeInstanceOf(TetherClient);
  });

  it('connect rejects another API version with both versions in the message', async () => {
    const err = await TetherClient.connect({
      baseUrl: 'http://tether.test',
      token: 't',
      fetch: daemon({ status: 'ok', version: '7.0.0', apiVersion: '7.0.0' }),
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TetherVersionError);
    const v = err as TetherVersionError;
    expect(v.daemonApiVersion).toBe('7.0.0');
    expect(v.sdkApiVersion).toBe(API_VERSION);
    expect(v.message).toContain('serves API 7.0.0');
    expect(v.message).toContain(`@tether/client ${API_VERSION}`);
  });

  it('connect rejects a daemon that predates apiVersion', async () => {
    const err = await TetherClient.connect({
      baseUrl: 'http://tether.test',
      token: 't',
      fetch: daemon({ status: 'ok', version: '0.0.9' }),
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TetherVersionError);
    expect((err as Error).message).toContain('does not report its API version');
  });

  it('connect reports an absent daemon as a network error, not a version error', async () => {
    const err = await TetherClient.connect({
      baseUrl: 'http://tether.test',
      token: 't',
      fetch: (async () => {
        throw new TypeError('fetch failed');
      }) as typeof fetch,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TetherNetworkError);
  });
});
