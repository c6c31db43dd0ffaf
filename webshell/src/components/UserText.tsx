import { useT } from '../i18n';
import type { PromptAttachment } from '../state/session-state';
import { IconTool } from './Icons';
import { RichText } from './RichText';

/**
 * A user message: its text, then the images it carried as thumbnails and
 * its files as chips. The daemon's text names each such block on a line
 * of its own ("[image]", "[resource]", a file link); with the blocks shown
 * those lines are left out.
 */
export function UserText({ text, attachments }: { text: string; attachments?: PromptAttachment[] }) {
  const { t } = useT();
  if (!attachments?.length) return <RichText text={text} />;
  const shown = text
    .split('\n')
    .filter((l) => !/^\[(image|audio|resource)\]$/.test(l) && !/^\[[^\]]*\]\(file:\/\/[^)]*\)$/.test(l))
    .join('\n');
  let images = 0;
  return (
    <>
      {shown.trim() && <RichText text={shown} />}
      <div class="msg__attachments" data-testid="message-attachments">
        {attachments.map((a, i) =>
          a.kind === 'image' ? (
            <img key={i} class="msg__image" src={`data:${a.mimeType};base64,${a.data}`} alt={t('msg.image', { n: ++images })} />
          ) : (
            <span key={i} class="msg__file" title={a.embedded ? t('msg.fileEmbedded') : t('msg.fileLinked')}>
              <IconTool kind="read" /> {a.name}
            </span>
          ),
        )}
      </div>
    </>
  );
}
