/** A stream position `<epoch>:<seq>` (DESIGN.md section 3). */
export interface Position {
  epoch: string;
  seq: number;
}

export function parsePosition(cursor: string | undefined | null): Position | undefined {
  if (!cursor) return undefined;
  const i = cursor.lastIndexOf(':');
  if (i <= 0) return undefined;
  const seq = Number(cursor.slice(i + 1));
  if (!Number.isSafeInteger(seq) || seq < 0) return undefined;
  return { epoch: cursor.slice(0, i), seq };
}
