import { useT } from '../i18n';
import { formatSize } from '../state/workspace';
import type { ImageAttachment } from '../lib/prompt-blocks';
import { IconClose } from './Icons';

/** The images waiting in the composer, each with a thumbnail and Remove. */
export function Attachments({ images, onRemove }: { images: ImageAttachment[]; onRemove: (id: string) => void }) {
  const { t } = useT();
  if (images.length === 0) return null;
  return (
    <ul class="attachments" aria-label={t('composer.attachments')} data-testid="attachments">
      {images.map((i) => (
        <li key={i.id} class="attachment" data-testid="attachment">
          <img class="attachment__thumb" src={`data:${i.mimeType};base64,${i.data}`} alt={i.name} />
          <span class="attachment__name">{i.name}</span>
          <span class="muted"> {formatSize(i.size)}</span>
          <button type="button" class="btn btn--icon btn--small" aria-label={t('composer.removeAttachment', { name: i.name })} onClick={() => onRemove(i.id)}>
            <IconClose />
          </button>
        </li>
      ))}
    </ul>
  );
}
