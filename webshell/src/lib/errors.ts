// Error helpers that duck-type the SDK's errors (TetherProblem has status,
// code and detail; network and timeout errors have a message).

export function errorStatus(e: unknown): number | undefined {
  const s = (e as { status?: unknown } | null)?.status;
  return typeof s === 'number' ? s : undefined;
}

export function errorCode(e: unknown): string | undefined {
  const c = (e as { code?: unknown } | null)?.code;
  return typeof c === 'string' ? c : undefined;
}

export function isUnauthorized(e: unknown): boolean {
  return errorStatus(e) === 401;
}

export function isAbort(e: unknown): boolean {
  return (e as { name?: unknown } | null)?.name === 'AbortError';
}

/** A sentence for the user. */
export function errorText(e: unknown): string {
  if (e == null) return 'Unknown error';
  if (typeof e === 'string') return e;
  const o = e as { detail?: unknown; title?: unknown; message?: unknown; body?: unknown };
  if (typeof o.detail === 'string' && o.detail) return o.detail;
  const body = o.body as { detail?: unknown; title?: unknown } | undefined;
  if (body && typeof body.detail === 'string' && body.detail) return body.detail;
  if (typeof o.message === 'string' && o.message) return o.message;
  if (typeof o.title === 'string' && o.title) return o.title;
  return String(e);
}
