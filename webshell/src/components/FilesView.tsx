// The workspace panel's Files tab: the session's directory as a tree
// (directories load when opened) and a viewer for the file picked,
// highlighted by the language its name says.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { useT } from '../i18n';
import { errorText } from '../lib/errors';
import { highlightCode, languageOfPath } from '../lib/highlight';
import { fileText, formatSize } from '../state/workspace';
import type { WorkspaceApi, WorkspaceEntry, WorkspaceFile, WorkspaceListing } from '../state/types';
import { Spinner } from './Badges';

type Dir = { status: 'loading' } | { status: 'ready'; listing: WorkspaceListing } | { status: 'error'; error: string };

export function FilesView({ api }: { api: WorkspaceApi }) {
  const { t } = useT();
  const [dirs, setDirs] = useState<Record<string, Dir>>({});
  const [open, setOpen] = useState<Set<string>>(() => new Set(['']));
  const [picked, setPicked] = useState<string | undefined>();
  const [file, setFile] = useState<{ path: string; f?: WorkspaceFile; error?: string } | undefined>();

  const load = (path: string) => {
    setDirs((d) => ({ ...d, [path]: { status: 'loading' } }));
    api.workspace
      .list(path)
      .then((listing) => setDirs((d) => ({ ...d, [path]: { status: 'ready', listing } })))
      .catch((e: unknown) => setDirs((d) => ({ ...d, [path]: { status: 'error', error: errorText(e) } })));
  };
  const view = (path: string) => {
    setPicked(path);
    setFile({ path });
    api.workspace
      .read(path)
      .then((f) => setFile((cur) => (cur?.path === path ? { path, f } : cur)))
      .catch((e: unknown) => setFile((cur) => (cur?.path === path ? { path, error: errorText(e) } : cur)));
  };
  const refresh = () => {
    for (const p of open) load(p);
    if (picked) view(picked);
  };
  useEffect(() => load(''), [api]);

  const toggle = (path: string) => {
    const next = new Set(open);
    if (next.has(path)) next.delete(path);
    else {
      next.add(path);
      if (!dirs[path] || dirs[path]!.status === 'error') load(path);
    }
    setOpen(next);
  };

  const renderDir = (path: string, depth: number) => {
    const d = dirs[path];
    if (!d || d.status === 'loading')
      return (
        <li class="tree__note" style={{ paddingLeft: `${depth * 14 + 8}px` }}>
          <Spinner /> {t('ws.loading')}
        </li>
      );
    if (d.status === 'error')
      return (
        <li class="tree__note tree__note--error" role="alert" style={{ paddingLeft: `${depth * 14 + 8}px` }}>
          {d.error}
        </li>
      );
    const { entries, truncated } = d.listing;
    return (
      <>
        {entries.length === 0 && (
          <li class="tree__note" style={{ paddingLeft: `${depth * 14 + 8}px` }}>
            {t('ws.empty')}
          </li>
        )}
        {entries.map((e) => renderNode(e, depth))}
        {truncated && (
          <li class="tree__note" style={{ paddingLeft: `${depth * 14 + 8}px` }}>
            {t('ws.truncatedDir', { n: entries.length })}
          </li>
        )}
      </>
    );
  };

  const renderNode = (e: WorkspaceEntry, depth: number) => {
    const path = d0(e.path);
    const isDir = e.type === 'dir';
    const expanded = isDir && open.has(path);
    return (
      <li key={path}>
        <button
          type="button"
          class={`tree__item${picked === path ? ' tree__item--picked' : ''}`}
          style={{ paddingLeft: `${depth * 14 + 8}px` }}
          data-testid="ws-entry"
          data-path={path}
          data-type={e.type}
          aria-expanded={isDir ? expanded : undefined}
          onClick={() => (isDir ? toggle(path) : view(path))}
          title={`${e.mode} ${formatSize(e.size)}`}
        >
          <span class="tree__icon" aria-hidden="true">
            {isDir ? (expanded ? '▾' : '▸') : e.type === 'symlink' ? '↪' : '·'}
          </span>
          <span class="tree__name">{e.name}</span>
        </button>
        {expanded && <ul class="tree">{renderDir(path, depth + 1)}</ul>}
      </li>
    );
  };

  return (
    <div class="files" data-testid="ws-files">
      <div class="ws__bar">
        <button type="button" class="btn btn--ghost btn--small" onClick={refresh}>
          {t('ws.refresh')}
        </button>
      </div>
      <div class="files__split">
        <ul class="tree tree--root" aria-label={t('ws.tab.files')}>
          {renderDir('', 0)}
        </ul>
        <FileViewer file={file} />
      </div>
    </div>
  );
}

/** An entry's path as the listing gives it ("." is the root). */
function d0(p: string): string {
  return p === '.' ? '' : p;
}

function FileViewer({ file }: { file: { path: string; f?: WorkspaceFile; error?: string } | undefined }) {
  const { t } = useT();
  if (!file) return <div class="viewer viewer--empty">{t('ws.pickFile')}</div>;
  const { f } = file;
  return (
    <div class="viewer" data-testid="ws-viewer" data-path={file.path}>
      <div class="viewer__head mono">{file.path}</div>
      {!f && !file.error && (
        <div class="viewer__note">
          <Spinner /> {t('ws.loading')}
        </div>
      )}
      {file.error && (
        <div class="viewer__note viewer__note--error" role="alert">
          {file.error}
        </div>
      )}
      {f && f.binary && <div class="viewer__note">{t('ws.binary', { size: formatSize(f.size) })}</div>}
      {f && !f.binary && (
        <>
          {f.truncated && <div class="viewer__note">{t('ws.fileTruncated', { shown: formatSize(f.length), size: formatSize(f.size) })}</div>}
          {f.encoding === 'base64' && <div class="viewer__note">{t('ws.notUtf8')}</div>}
          <FileText path={file.path} text={fileText(f.content, f.encoding)} />
        </>
      )}
    </div>
  );
}

/**
 * Past this size a file is shown plain: highlight.js takes time in
 * proportion, on the page's only thread.
 */
const HIGHLIGHT_MAX = 512 * 1024;

function FileText({ path, text }: { path: string; text: string }) {
  const lang = text.length <= HIGHLIGHT_MAX ? languageOfPath(path) : undefined;
  const h = useMemo(() => (lang ? highlightCode(text, lang) : undefined), [text, lang]);
  if (!h || !h.lang)
    return (
      <pre class="viewer__text" tabIndex={0} data-testid="ws-file-text">
        {text}
      </pre>
    );
  return (
    <pre class="viewer__text" tabIndex={0} data-testid="ws-file-text" data-lang={h.lang}>
      {/* highlight.js escapes the text it wraps */}
      <code class={`hljs language-${h.lang}`} dangerouslySetInnerHTML={{ __html: h.html }} />
    </pre>
  );
}
