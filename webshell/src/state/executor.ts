// The executor of a session as the pane shows it: the agent's status and
// last start failure, and where it runs (runtime and host), folded from the
// session, status reads and session.executor_status events, each of which
// may leave out what the others said.
import type { AuthMethod, ExecutorStatus } from './types';

/** Where a session's agent runs: the executor's runtime and, for a hosted one, its host. */
export interface ExecutorPlace {
  /** standalone, detached or remote. */
  runtime?: string;
  /** The executor host: `local` for detached, the configured name for remote; none for standalone. */
  host?: string;
}

/**
 * The agent process: its status and last start failure, and where it runs.
 * `code` is the failure's stable code (`agent_auth_required`: the agent
 * needs credentials, see auth.ts); `authMethods` what the daemon's problem
 * said the agent accepts.
 */
export interface ExecutorView extends ExecutorPlace {
  status?: ExecutorStatus;
  error?: string;
  code?: string;
  authMethods?: AuthMethod[];
}

/**
 * Where the agent runs after a report that may name it: a report without a
 * runtime (a status read names no host, an older event neither) keeps what
 * the session or an earlier event said; a report of the same runtime
 * without a host keeps the host (GET /status carries none).
 */
export function placeOf(prev: ExecutorPlace, runtime: string | undefined, host: string | undefined): ExecutorPlace {
  if (!runtime) return { ...(prev.runtime ? { runtime: prev.runtime } : {}), ...(prev.host ? { host: prev.host } : {}) };
  const h = host || (runtime === prev.runtime ? prev.host : undefined);
  return { runtime, ...(h ? { host: h } : {}) };
}

/**
 * The executor after a status report: the failure's code only while the
 * status is error, the auth methods a problem named kept while the same
 * failure stands (status and events do not carry them), and where the
 * agent runs (see placeOf).
 */
export function reportedExecutor(
  prev: ExecutorView,
  status: ExecutorStatus | undefined,
  error: string | undefined,
  code: string | undefined,
  authMethods?: AuthMethod[],
  place: ExecutorPlace = {},
): ExecutorView {
  const where = placeOf(prev, place.runtime, place.host);
  if (status !== 'error') return { status, error, ...where };
  const methods = authMethods ?? (code && code === prev.code ? prev.authMethods : undefined);
  return { status, error, ...(code ? { code } : {}), ...(methods ? { authMethods: methods } : {}), ...where };
}
