// A small, safe text renderer: fenced code blocks, inline `code`, and
// paragraphs. No HTML is ever interpreted.
import type { ComponentChildren } from 'preact';

function inline(text: string): ComponentChildren[] {
  const out: ComponentChildren[] = [];
  const re = /`([^`\n]+)`|\*\*([^*\n]+)\*\*/g;
  let last = 0;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text))) {
    if (m.index > last) out.push(text.slice(last, m.index));
    if (m[1] !== undefined) out.push(<code>{m[1]}</code>);
    else out.push(<strong>{m[2]}</strong>);
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

export function RichText({ text }: { text: string }) {
  const parts = text.split(/^```[^\n]*\n?/m);
  // Odd parts are inside fences (an unterminated fence while streaming is still code).
  return (
    <div class="rich">
      {parts.map((p, i) =>
        i % 2 === 1 ? (
          <pre class="code" key={i}>
            <code>{p.replace(/\n$/, '')}</code>
          </pre>
        ) : (
          p
            .split(/\n{2,}/)
            .filter((para) => para.length > 0)
            .map((para, j) => <p key={`${i}-${j}`}>{inline(para)}</p>)
        ),
      )}
    </div>
  );
}
