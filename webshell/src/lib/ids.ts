/** A client-chosen promptId (`^[A-Za-z0-9][A-Za-z0-9._:-]*$`, at most 64). */
export function newPromptId(prefix = 'ws'): string {
  const c = globalThis.crypto;
  if (c && typeof c.randomUUID === 'function') return `${prefix}-${c.randomUUID()}`;
  const bytes = new Uint8Array(16);
  if (c && typeof c.getRandomValues === 'function') c.getRandomValues(bytes);
  else for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(Math.random() * 256);
  return `${prefix}-${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

/** A short, human-friendly form of an id. */
export function shortId(id: string): string {
  return id.length > 8 ? id.slice(0, 8) : id;
}
