import { TetherError } from './errors.js';

/**
 * The API contract version this SDK was generated from: `info.version` of
 * api/openapi.yaml, which is also this package's version (they move
 * together; test/version.test.ts fails when they drift).
 */
export const API_VERSION = '0.1.0';

/**
 * Thrown by `TetherClient.connect()` when the daemon serves a contract this
 * SDK cannot speak: another major version, or (while the major is 0) another
 * minor version, or an older minor version than the SDK's.
 */
export class TetherVersionError extends TetherError {
  /** The daemon's contract version (`apiVersion` of /health), '' if it sent none. */
  readonly daemonApiVersion: string;
  /** The daemon's release version (`version` of /health). */
  readonly daemonVersion: string;
  /** This SDK's contract version (API_VERSION). */
  readonly sdkApiVersion: string;

  constructor(daemonApiVersion: string, daemonVersion: string) {
    super(
      daemonApiVersion === ''
        ? `tetherd ${daemonVersion || '(unknown version)'} does not report its API version: it predates @tether/client ${API_VERSION}; upgrade tetherd or use an older @tether/client`
        : `tetherd ${daemonVersion} serves API ${daemonApiVersion}, but @tether/client ${API_VERSION} needs API ${compatibleRange(API_VERSION)}; install @tether/client@${daemonApiVersion} or a tetherd serving API ${API_VERSION}`,
    );
    this.name = 'TetherVersionError';
    this.daemonApiVersion = daemonApiVersion;
    this.daemonVersion = daemonVersion;
    this.sdkApiVersion = API_VERSION;
  }
}

function parse(v: string): [number, number] | undefined {
  const m = /^(\d+)\.(\d+)\.\d+/.exec(v);
  return m ? [Number(m[1]), Number(m[2])] : undefined;
}

function compatibleRange(sdk: string): string {
  const [major, minor] = parse(sdk) ?? [0, 0];
  return major === 0 ? `${major}.${minor}.x` : `${major}.x (at least ${major}.${minor})`;
}

/**
 * Whether an SDK of contract version `sdk` can talk to a daemon serving
 * `daemon` (semver: a newer minor only adds; 0.x minors may break).
 */
export function apiCompatible(sdk: string, daemon: string): boolean {
  const s = parse(sdk);
  const d = parse(daemon);
  if (!s || !d || s[0] !== d[0]) return false;
  return s[0] === 0 ? s[1] === d[1] : d[1] >= s[1];
}
