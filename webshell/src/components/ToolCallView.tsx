import { lineDiff } from '../lib/diff';
import { useT, type MessageKey } from '../i18n';
import type { ToolCall } from '../state/types';
import { Spinner } from './Badges';
import { IconTool } from './Icons';

type Block = Record<string, unknown>;

function DiffView({ path, oldText, newText }: { path?: string; oldText?: string | null; newText?: string | null }) {
  const lines = lineDiff(oldText, newText);
  const added = lines.filter((l) => l.op === '+').length;
  const removed = lines.filter((l) => l.op === '-').length;
  return (
    <figure class="diff" data-testid="diff">
      <figcaption class="diff__head">
        <span class="mono">{path ?? ''}</span>
        <span class="diff__stat">
          <span class="diff__add">+{added}</span> <span class="diff__del">−{removed}</span>
        </span>
      </figcaption>
      <pre class="diff__body" role="table" aria-label={path ? `Diff of ${path}` : 'Diff'}>
        {lines.map((l, i) => (
          <div key={i} role="row" class={`diff__line diff__line--${l.op === '+' ? 'add' : l.op === '-' ? 'del' : 'ctx'}`}>
            <span class="diff__no" aria-hidden="true">
              {l.oldNo ?? ''}
            </span>
            <span class="diff__no" aria-hidden="true">
              {l.newNo ?? ''}
            </span>
            <span class="diff__op" aria-hidden="true">
              {l.op}
            </span>
            <span class="diff__text" role="cell">
              {l.text || ' '}
            </span>
          </div>
        ))}
      </pre>
    </figure>
  );
}

function textOf(b: Block): string | undefined {
  if (typeof b.text === 'string') return b.text;
  const inner = b.content as Block | undefined;
  if (inner && typeof inner === 'object') {
    if (typeof inner.text === 'string') return inner.text;
    if (inner.type === 'resource_link' && typeof inner.uri === 'string') return inner.uri;
    const res = inner.resource as Block | undefined;
    if (res && typeof res.text === 'string') return res.text;
  }
  return undefined;
}

function ContentBlock({ block }: { block: Block }) {
  if (block.type === 'diff') {
    return <DiffView path={block.path as string} oldText={block.oldText as string | null} newText={block.newText as string | null} />;
  }
  if (block.type === 'terminal') {
    return <pre class="code code--terminal">terminal {String(block.terminalId ?? '')}</pre>;
  }
  const text = textOf(block);
  if (text !== undefined) return <pre class="code">{text}</pre>;
  return <pre class="code">{JSON.stringify(block, null, 2)}</pre>;
}

export function ToolCallView({ call }: { call: ToolCall }) {
  const { t } = useT();
  const content = (call.content ?? []) as Block[];
  const hasDiff = content.some((b) => b.type === 'diff');
  const kind = call.kind ?? 'other';
  const statusKey = `tool.status.${call.status}` as MessageKey;
  const running = call.status === 'in_progress' || call.status === 'pending';
  const shortContent = content.length > 0 && content.every((b) => (textOf(b)?.split('\n').length ?? 99) <= 4);
  const open = hasDiff || call.status === 'failed' || shortContent;
  const locations = (call.locations ?? []) as { path?: string; line?: number }[];
  return (
    <details class={`tool tool--${call.status}${call.interrupted ? ' tool--interrupted' : ''}`} open={open} data-testid="tool-call" data-tool-status={call.status}>
      {/* Named by what it shows (kind, title, status), as a screen reader reads it. */}
      <summary class="tool__head">
        <span class="tool__kind" title={kind}>
          <IconTool kind={kind} /> {kind}
        </span>
        <span class="tool__title">{call.title}</span>
        <span class={`pill pill--${call.status}`}>
          {running && <Spinner />}
          {t(statusKey)}
        </span>
        {call.interrupted && <span class="pill pill--warn">{t('tool.interrupted')}</span>}
      </summary>
      <div class="tool__body">
        {locations.length > 0 && (
          <ul class="tool__locations">
            {locations.map((l, i) => (
              <li key={i} class="mono">
                {l.path}
                {l.line ? `:${l.line}` : ''}
              </li>
            ))}
          </ul>
        )}
        {content.map((b, i) => (
          <ContentBlock key={i} block={b} />
        ))}
        {call.rawInput !== undefined && call.rawInput !== null && !hasDiff && (
          <details class="tool__raw">
            <summary>{t('tool.input')}</summary>
            <pre class="code">{JSON.stringify(call.rawInput, null, 2)}</pre>
          </details>
        )}
      </div>
    </details>
  );
}
