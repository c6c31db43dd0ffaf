// A line diff (longest common subsequence) for tool-call diffs.
export interface DiffLine {
  op: ' ' | '-' | '+';
  text: string;
  oldNo?: number;
  newNo?: number;
}

const MAX_CELLS = 400_000;

export function lineDiff(oldText: string | null | undefined, newText: string | null | undefined): DiffLine[] {
  const a = oldText ? oldText.replace(/\n$/, '').split('\n') : [];
  const b = newText ? newText.replace(/\n$/, '').split('\n') : [];
  // Trim the common head and tail: most edits are small.
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const am = a.slice(head, a.length - tail);
  const bm = b.slice(head, b.length - tail);
  const out: DiffLine[] = [];
  for (let i = 0; i < head; i++) out.push({ op: ' ', text: a[i]!, oldNo: i + 1, newNo: i + 1 });
  const n = am.length;
  const m = bm.length;
  if (n * m > MAX_CELLS) {
    am.forEach((t, i) => out.push({ op: '-', text: t, oldNo: head + i + 1 }));
    bm.forEach((t, j) => out.push({ op: '+', text: t, newNo: head + j + 1 }));
  } else {
    const L: Uint32Array[] = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
    for (let i = n - 1; i >= 0; i--)
      for (let j = m - 1; j >= 0; j--) L[i]![j] = am[i] === bm[j] ? L[i + 1]![j + 1]! + 1 : Math.max(L[i + 1]![j]!, L[i]![j + 1]!);
    let i = 0;
    let j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && am[i] === bm[j]) {
        out.push({ op: ' ', text: am[i]!, oldNo: head + i + 1, newNo: head + j + 1 });
        i++;
        j++;
      } else if (i < n && (j === m || L[i + 1]![j]! >= L[i]![j + 1]!)) {
        // Removals first, as diffs are usually read.
        out.push({ op: '-', text: am[i]!, oldNo: head + i + 1 });
        i++;
      } else {
        out.push({ op: '+', text: bm[j]!, newNo: head + j + 1 });
        j++;
      }
    }
  }
  for (let k = 0; k < tail; k++) {
    const oi = a.length - tail + k;
    const ni = b.length - tail + k;
    out.push({ op: ' ', text: a[oi]!, oldNo: oi + 1, newNo: ni + 1 });
  }
  return out;
}
