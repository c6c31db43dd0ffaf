// A composed message as ACP content blocks: its text, the images pasted or
// dropped (only for an agent that takes images), and the files it mentions
// (embedded where the agent takes embedded context, else linked).
import type { ContentBlock, WorkspaceFile } from '../state/types';

/** An image waiting in the composer, already as the block it is sent as. */
export interface ImageAttachment {
  id: string;
  name: string;
  mimeType: string;
  /** Base64, without a data: prefix (ACP ImageContent.data). */
  data: string;
  /** Bytes after any shrinking. */
  size: number;
}

/**
 * The largest image sent as is; a bigger one is scaled down (its longest
 * side to MAX_IMAGE_EDGE) and re-encoded. The daemon's default body limit
 * is 2 MB, and base64 adds a third.
 */
export const MAX_IMAGE_BYTES = 1_000_000;
/** The longest side an image is scaled to (what vision models read in full). */
export const MAX_IMAGE_EDGE = 1568;
/** The largest file embedded in a prompt; a bigger one is linked. */
export const MAX_EMBED_BYTES = 256 * 1024;

/** The image types ACP agents read. */
export const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];

/** An error a person can act on: the image is not one an agent reads, or too big even scaled down. */
export class ImageError extends Error {
  constructor(
    message: string,
    readonly reason: 'type' | 'size',
  ) {
    super(message);
  }
}

function base64(bytes: Uint8Array): string {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

/** Scales an image down to MAX_IMAGE_EDGE and re-encodes it (JPEG, or PNG for a small one). */
async function shrink(file: Blob): Promise<Blob> {
  const bitmap = await createImageBitmap(file);
  const scale = Math.min(1, MAX_IMAGE_EDGE / Math.max(bitmap.width, bitmap.height));
  const canvas = document.createElement('canvas');
  canvas.width = Math.max(1, Math.round(bitmap.width * scale));
  canvas.height = Math.max(1, Math.round(bitmap.height * scale));
  canvas.getContext('2d')!.drawImage(bitmap, 0, 0, canvas.width, canvas.height);
  bitmap.close();
  return new Promise((resolve, reject) =>
    canvas.toBlob((b) => (b ? resolve(b) : reject(new Error('the image could not be encoded'))), 'image/jpeg', 0.85),
  );
}

/** Reads a pasted or dropped file as an image attachment, shrinking it if it is too big to send. */
export async function readImage(file: File, id: string): Promise<ImageAttachment> {
  if (!IMAGE_TYPES.includes(file.type)) throw new ImageError(`${file.name || 'the file'} is not a PNG, JPEG, GIF or WebP image`, 'type');
  let blob: Blob = file;
  if (blob.size > MAX_IMAGE_BYTES) {
    blob = await shrink(file);
    if (blob.size > MAX_IMAGE_BYTES) throw new ImageError(`${file.name || 'the image'} is too large, even scaled down`, 'size');
  }
  const bytes = new Uint8Array(await blob.arrayBuffer());
  return { id, name: file.name || 'pasted image', mimeType: blob.type || file.type, data: base64(bytes), size: bytes.length };
}

/** file:// URI of path (relative to the session's directory cwd). */
export function fileUri(cwd: string, path: string): string {
  const abs = `${cwd.replace(/\/+$/, '')}/${path}`;
  return 'file://' + abs.split('/').map(encodeURIComponent).join('/');
}

export interface MentionSource {
  cwd: string;
  /** The agent takes embedded resources (promptCapabilities.embeddedContext). */
  embed: boolean;
  /** Reads a workspace file (GET /session/{id}/workspace/file). */
  read?: (path: string, range?: { offset?: number; length?: number }) => Promise<WorkspaceFile>;
}

/**
 * The block for a mentioned path: a text file small enough, embedded with
 * its content where the agent takes that; anything else (a directory, a
 * binary or big file, a read that failed, an agent without embedded
 * context) a resource link the agent can read itself.
 */
export async function mentionBlock(path: string, src: MentionSource): Promise<ContentBlock> {
  const uri = fileUri(src.cwd, path);
  const link: ContentBlock = { type: 'resource_link', uri, name: path };
  if (!src.embed || !src.read) return link;
  try {
    const f = await src.read(path, { length: MAX_EMBED_BYTES });
    if (f.binary || f.truncated || f.encoding !== 'utf-8') return { ...link, size: f.size };
    return { type: 'resource', resource: { uri, text: f.content, mimeType: 'text/plain' } };
  } catch {
    return link; // a directory, or gone: the agent resolves the link
  }
}

/** The prompt: the text (if any), then the images, then the mentioned files. */
export async function promptBlocks(text: string, images: ImageAttachment[], mentions: string[], src: MentionSource): Promise<ContentBlock[]> {
  const blocks: ContentBlock[] = [];
  if (text.trim()) blocks.push({ type: 'text', text });
  for (const i of images) blocks.push({ type: 'image', mimeType: i.mimeType, data: i.data });
  for (const b of await Promise.all(mentions.map((p) => mentionBlock(p, src)))) blocks.push(b);
  return blocks;
}
