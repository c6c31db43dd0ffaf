import type { Problem, RecoverySummary } from './gen/types.gen.js';

/**
 * Stable problem codes tetherd answers with today (`internal/errcode`).
 * `TetherProblem.code` is typed as this union widened to `string`, so new
 * codes from a newer daemon still type-check.
 */
export type KnownProblemCode =
  | 'invalid_request'
  | 'unauthorized'
  | 'not_found'
  | 'task_not_found'
  | 'session_not_found'
  | 'turn_not_found'
  | 'permission_not_found'
  | 'agent_profile_not_found'
  | 'agent_unavailable'
  | 'agent_auth_required'
  | 'invalid_cwd'
  | 'invalid_state'
  | 'session_terminal'
  | 'turn_active'
  | 'prompt_queue_full'
  | 'prompt_id_conflict'
  | 'permission_already_resolved'
  | 'invalid_permission_option'
  | 'agent_start_failed'
  | 'agent_error'
  | 'payload_too_large'
  | 'method_not_allowed'
  | 'shutting_down'
  | 'internal_error'
  | 'database_too_new'
  | 'validation_failed'
  | 'unsupported_media_type'
  | 'route_not_found'
  | 'malformed_json'
  | 'invalid_cursor'
  | 'too_many_subscribers'
  | 'working_directory_missing'
  | 'resume_failed'
  | 'turn_queued'
  | 'permission_pending'
  | 'session_closing'
  | 'nothing_to_continue'
  | 'history_degraded'
  | 'stream_ticket_invalid'
  | 'stream_ticket_expired'
  | 'stream_ticket_wrong_stream'
  | 'stream_ticket_in_use'
  | 'too_many_stream_tickets'
  | 'unknown_mode'
  | 'unknown_config_option'
  | 'invalid_config_value'
  | 'budget_exceeded';

export type ProblemCode = KnownProblemCode | (string & {});

/** Base class of every error the SDK throws on purpose. */
export class TetherError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * A non-2xx answer from tetherd: an RFC 9457 problem+json body with a
 * stable machine `code`. A body that is not a problem (a proxy's HTML page,
 * say) still gives a TetherProblem, with code `http_<status>`.
 */
export class TetherProblem extends TetherError {
  /** The HTTP status. */
  readonly status: number;
  /** The stable machine code (`session_not_found`, `turn_active`, ...). */
  readonly code: ProblemCode;
  /** The human-readable detail, if any. */
  readonly detail?: string;
  /** The problem's title, if any. */
  readonly title?: string;
  /** The whole parsed body (extension members included: `reason`, `recovery`, ...). */
  readonly body: Record<string, unknown>;

  constructor(status: number, body: unknown) {
    const obj: Record<string, unknown> =
      body !== null && typeof body === 'object' && !Array.isArray(body)
        ? (body as Record<string, unknown>)
        : { status, ...(typeof body === 'string' && body !== '' ? { detail: body.slice(0, 2000) } : {}) };
    const code = typeof obj.code === 'string' && obj.code !== '' ? obj.code : `http_${status}`;
    const detail = typeof obj.detail === 'string' ? obj.detail : undefined;
    const title = typeof obj.title === 'string' ? obj.title : undefined;
    super(`${status} ${code}${detail ? `: ${detail}` : title ? `: ${title}` : ''}`);
    this.status = status;
    this.code = code;
    if (detail !== undefined) this.detail = detail;
    if (title !== undefined) this.title = title;
    this.body = obj;
  }

  /** The body as the contract's Problem type. */
  get problem(): Problem {
    return this.body as Problem;
  }

  /** `reason` of a declined continuation (409 from POST /session/{id}/continue), if present. */
  get reason(): string | undefined {
    return typeof this.body.reason === 'string' ? this.body.reason : undefined;
  }

  /** The recovery summary a declined continuation carries, if present. */
  get recovery(): RecoverySummary | undefined {
    const r = this.body.recovery;
    return r !== null && typeof r === 'object' ? (r as RecoverySummary) : undefined;
  }
}

/** The request did not complete within the client's timeout. */
export class TetherTimeoutError extends TetherError {
  readonly timeoutMs: number;
  constructor(timeoutMs: number, what = 'request') {
    super(`${what} timed out after ${timeoutMs} ms`);
    this.timeoutMs = timeoutMs;
  }
}

/** The request failed before an HTTP response arrived (refused, reset, DNS, ...). */
export class TetherNetworkError extends TetherError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** True if `e` is a TetherProblem, optionally with the given code (or one of them). */
export function isTetherProblem(e: unknown, code?: ProblemCode | readonly ProblemCode[]): e is TetherProblem {
  if (!(e instanceof TetherProblem)) return false;
  if (code === undefined) return true;
  return typeof code === 'string' ? e.code === code : code.includes(e.code);
}

/** True for an abort caused by the caller's AbortSignal (not a timeout). */
export function isAbortError(e: unknown): boolean {
  return (
    e !== null &&
    typeof e === 'object' &&
    'name' in e &&
    ((e as { name: unknown }).name === 'AbortError')
  );
}
