// An axe-core scan of the page as it stands (@axe-core/playwright): the
// serious and critical violations, each node with the rule it breaks.
// Issue 34 asks for none on the main views. KNOWN_ELSEWHERE would list
// violations of views being redone elsewhere, reported (as test
// diagnostics) instead of failed on; it is empty.
import AxeBuilder from '@axe-core/playwright';

export const KNOWN_ELSEWHERE = [];

/** [{ rule, impact, target, summary }] of the serious and critical violations on page. */
export async function seriousViolations(page) {
  const r = await new AxeBuilder({ page }).analyze();
  return r.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .flatMap((v) => v.nodes.map((n) => ({ rule: v.id, impact: v.impact, target: n.target.join(' '), summary: (n.failureSummary ?? '').replace(/\s+/g, ' ').trim() })));
}

/**
 * Scans page; fails (returns the violations to assert on) on any serious
 * or critical one not in KNOWN_ELSEWHERE, and reports those through
 * t.diagnostic with the view's name.
 */
export async function scan(t, page, view) {
  const found = await seriousViolations(page);
  const known = [];
  const unknown = [];
  for (const v of found) {
    // axe names the node by its own selector: the known ones are found by
    // what the node is inside of.
    const inside = async (sel) => page.locator(v.target).first().evaluate((e, s) => !!e.closest(s), sel).catch(() => false);
    let k;
    for (const e of KNOWN_ELSEWHERE) if (e.rule === v.rule && (await inside(e.selector))) k = e;
    (k ? known : unknown).push(v);
    if (k) t.diagnostic(`axe, ${view}: ${v.impact} ${v.rule} at ${v.target}, in ${k.where}`);
  }
  return unknown;
}
