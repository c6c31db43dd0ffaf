// The daemon token reaches the shell once, in the URL fragment printed by
// `tetherd serve` (#token=...), which browsers never send to a server. It
// is moved to localStorage and removed from the address bar and history.
import { load, save } from './storage';

const KEY = 'tether.token';

/** Reads #token=… from the location, stores it and strips it from the URL. */
export function adoptTokenFromLocation(loc: Location = window.location, hist: History = window.history): string | undefined {
  const hash = loc.hash.replace(/^#/, '');
  if (!hash) return undefined;
  const params = new URLSearchParams(hash);
  const token = params.get('token')?.trim();
  if (!token) return undefined;
  params.delete('token');
  const rest = params.toString();
  hist.replaceState(hist.state, '', loc.pathname + loc.search + (rest ? `#${rest}` : ''));
  save(KEY, token);
  return token;
}

export function storedToken(): string | undefined {
  const t = load<string | null>(KEY, null);
  return typeof t === 'string' && t ? t : undefined;
}

export function storeToken(token: string): void {
  save(KEY, token);
}

export function forgetToken(): void {
  save(KEY, undefined);
}
