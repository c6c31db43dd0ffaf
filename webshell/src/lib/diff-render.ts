// Diffs drawn by diff2html (side by side or unified) and highlighted by
// the shell's highlight.js. Loaded on demand (components/DiffBlock): with
// its templates and jsdiff it is more than a first paint needs.
import { createTwoFilesPatch } from 'diff';
import { html } from 'diff2html';
import { Diff2HtmlUI } from 'diff2html/lib-esm/ui/js/diff2html-ui-base';
import { ColorSchemeType, LineMatchingType, OutputFormatType } from 'diff2html/lib-esm/types';
import 'diff2html/bundles/css/diff2html.min.css';
import DOMPurify from 'dompurify';
import { hljs } from './highlight';

export type DiffFormat = 'side-by-side' | 'line-by-line';

/** A proposed edit as ACP tool calls carry it (content of type "diff"). */
export interface Edit {
  path: string;
  oldText?: string | null;
  newText?: string | null;
}

/** A unified patch of an edit; an absent oldText is a new file. */
export function patchOfEdit(e: Edit): string {
  const old = e.oldText ?? '';
  return createTwoFilesPatch(e.oldText == null ? '/dev/null' : e.path, e.path, old, e.newText ?? '', undefined, undefined, { context: 3 });
}

const purify = DOMPurify();

/**
 * Draws patch into el. diff2html escapes the patch's text itself; its
 * markup still goes through DOMPurify, so that a flaw there cannot run
 * script from a file's content. Every line is highlighted on its own, by
 * the file's extension.
 */
export function drawDiff(el: HTMLElement, patch: string, format: DiffFormat): void {
  const config = {
    outputFormat: format === 'side-by-side' ? OutputFormatType.SIDE_BY_SIDE : OutputFormatType.LINE_BY_LINE,
    colorScheme: ColorSchemeType.AUTO,
    drawFileList: false,
    // Pairs of changed lines get word marks; more lines than this are
    // not paired (the pairing is quadratic).
    matching: LineMatchingType.LINES,
    matchingMaxComparisons: 1000,
    maxLineLengthHighlight: 2000,
    diffMaxChanges: 5000,
    highlight: true,
    synchronisedScroll: true,
    fileListToggle: false,
    fileContentToggle: false,
    stickyFileHeaders: false,
  };
  el.innerHTML = purify.sanitize(html(patch, config));
  new Diff2HtmlUI(el, undefined, config, hljs).draw();
  // The regions that scroll sideways take the keyboard's focus, to be
  // scrolled with the arrow keys.
  for (const region of el.querySelectorAll<HTMLElement>('.d2h-file-side-diff, .d2h-file-diff')) region.tabIndex = 0;
}
