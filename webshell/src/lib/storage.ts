// localStorage access that never throws (private modes, quotas, tests).
export function load<T>(key: string, fallback: T): T {
  try {
    const v = globalThis.localStorage?.getItem(key);
    return v == null ? fallback : (JSON.parse(v) as T);
  } catch {
    return fallback;
  }
}

export function save(key: string, value: unknown): void {
  try {
    if (value === undefined) globalThis.localStorage?.removeItem(key);
    else globalThis.localStorage?.setItem(key, JSON.stringify(value));
  } catch {
    // not persisted: fine
  }
}
