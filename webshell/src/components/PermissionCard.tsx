// The permission questions waiting for an answer, above the composer. Each
// shows what it asks about, from the tool call it gates (ACP sends the call
// with the question): the diff of an edit, the command of an execute, else
// the places it touches. "Allow once" is the primary answer; "Allow always"
// is there but does not look like the default, since it outlives the click.
import { useT } from '../i18n';
import { highlightCode } from '../lib/highlight';
import type { PermissionView, SessionViewState } from '../state/session-state';
import { toolCallKey } from '../state/session-state';
import type { ToolCall } from '../state/types';
import { DiffBlock } from './DiffBlock';
import { IconLock } from './Icons';

type Block = Record<string, unknown>;

/** The command an execute call runs: rawInput.command as a string or an argv list. */
export function commandOf(call: ToolCall | undefined): string | undefined {
  const input = call?.rawInput as Record<string, unknown> | null | undefined;
  const cmd = input && typeof input === 'object' ? (input.command ?? input.cmd) : undefined;
  if (typeof cmd === 'string' && cmd.trim()) return cmd;
  if (Array.isArray(cmd) && cmd.length > 0 && cmd.every((a) => typeof a === 'string')) return cmd.join(' ');
  return undefined;
}

/** The option the card makes primary: allow once, else the first allowing one. */
export function primaryOption(p: Pick<PermissionView, 'options'>): string | undefined {
  return (p.options.find((o) => o.kind === 'allow_once') ?? p.options.find((o) => o.kind.startsWith('allow')))?.optionId;
}

function Subject({ call }: { call: ToolCall | undefined }) {
  const { t } = useT();
  if (!call) return null;
  const diffs = ((call.content ?? []) as Block[]).filter((b) => b.type === 'diff' && typeof b.path === 'string');
  if (diffs.length > 0)
    return (
      <>
        {diffs.map((d, i) => {
          const path = d.path as string;
          return (
            <figure key={i} class="perm__diff" aria-label={t('perm.diffOf', { path })}>
              <figcaption class="mono perm__path">{path}</figcaption>
              <DiffBlock edit={{ path, oldText: d.oldText as string | null, newText: d.newText as string | null }} format="line-by-line" testId="permission-diff" path={path} focusable />
            </figure>
          );
        })}
      </>
    );
  const command = commandOf(call);
  if (command) {
    const h = highlightCode(command, 'bash');
    return (
      <pre class="code perm__command" aria-label={t('perm.command')} data-testid="permission-command">
        {/* highlight.js escapes the text it wraps */}
        <code class="hljs" dangerouslySetInnerHTML={{ __html: h.html }} />
      </pre>
    );
  }
  const locations = ((call.locations ?? []) as { path?: string; line?: number }[]).filter((l) => l.path);
  if (locations.length === 0) return null;
  return (
    <ul class="perm__locations">
      {locations.map((l, i) => (
        <li key={i} class="mono">
          {l.path}
          {l.line ? `:${l.line}` : ''}
        </li>
      ))}
    </ul>
  );
}

export function PermissionDock({ s, onAnswer }: { s: SessionViewState; onAnswer: (requestId: string, optionId: string) => void }) {
  const { t } = useT();
  const pending = Object.values(s.permissions).filter((p) => p.state === 'pending');
  if (pending.length === 0) return null;
  return (
    <div class="perm-dock">
      {pending.map((p) => {
        const call = p.toolCallId ? s.toolCalls[toolCallKey(p.promptId, p.toolCallId)] : undefined;
        const primary = primaryOption(p);
        return (
          <section class="perm" key={p.requestId} aria-label={t('perm.title')} data-testid="permission">
            <div class="perm__head">
              <IconLock /> {t('perm.title')}
            </div>
            {p.title && <div class="perm__title">{p.title}</div>}
            <Subject call={call} />
            <div class="perm__options">
              {p.options.map((o) => (
                <button
                  type="button"
                  key={o.optionId}
                  class={`btn${o.optionId === primary ? ' btn--primary' : ''}`}
                  disabled={p.answering}
                  onClick={() => onAnswer(p.requestId, o.optionId)}
                  data-option-kind={o.kind}
                  data-primary={o.optionId === primary ? 'true' : undefined}
                >
                  {o.name}
                </button>
              ))}
            </div>
          </section>
        );
      })}
    </div>
  );
}
