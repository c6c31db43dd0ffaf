// The composer's `@` mentions (completed from the workspace's listing) and
// images (offered only when the agent takes them).
import { cleanup, fireEvent, render, screen } from '@testing-library/preact';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Composer, type ComposerExtras } from '../src/components/Composer';
import type { WorkspaceEntry, WorkspaceListing } from '../src/state/types';
import { flush, workspaceEntry as entry } from './fixtures';

afterEach(cleanup);

const tree: Record<string, WorkspaceEntry[]> = {
  '': [entry('src', 'dir'), entry('README.md'), entry('main.go')],
  src: [entry('src/main.go'), entry('src/util.go')],
};

function mount(images: boolean) {
  const sent: [string, ComposerExtras][] = [];
  const listDir = vi.fn((p: string): Promise<WorkspaceListing> => Promise.resolve({ path: p || '.', entries: tree[p] ?? [], truncated: false }));
  render(
    <Composer
      sessionId="S"
      starting={false}
      readOnly={false}
      busy={false}
      cancelling={false}
      onSend={(text, extras) => sent.push([text, extras])}
      onCancel={() => {}}
      images={images}
      listDir={listDir}
    />,
  );
  return { sent, listDir };
}

const box = () => screen.getByRole('textbox', { name: 'Message' }) as HTMLTextAreaElement;
const type = (text: string) => {
  box().value = text;
  box().setSelectionRange(text.length, text.length);
  fireEvent.input(box());
};
const key = (k: string) => fireEvent.keyDown(box(), { key: k });
const options = () => screen.queryAllByRole('option').map((o) => o.textContent);
const png = () => new File([new Uint8Array([0x89, 0x50, 0x4e, 0x47, 1, 2, 3])], 'shot.png', { type: 'image/png' });

describe('@ mentions', () => {
  it('lists the workspace, walks into a directory, and sends the picked file as a mention', async () => {
    const { sent, listDir } = mount(false);
    type('fix @');
    await flush();
    expect(options()).toEqual(['src/', 'README.md', 'main.go']);
    type('fix @s');
    key('Enter'); // a directory: the mention stays open inside it
    expect(box().value).toBe('fix @src/');
    await flush();
    expect(listDir).toHaveBeenCalledWith('src');
    expect(options()).toEqual(['src/main.go', 'src/util.go']);
    key('ArrowDown');
    key('Tab');
    expect(box().value).toBe('fix @src/util.go ');
    expect(screen.queryByTestId('mention-menu')).toBeNull();
    type('fix @src/util.go please');
    key('Enter');
    expect(sent).toEqual([['fix @src/util.go please', { images: [], mentions: ['src/util.go'] }]]);
  });

  it('Esc closes the list, and a directory is listed once', async () => {
    const { listDir } = mount(false);
    type('@');
    await flush();
    key('Escape');
    expect(screen.queryByTestId('mention-menu')).toBeNull();
    type('@m');
    await flush();
    expect(options()).toEqual(['main.go', 'README.md']);
    expect(listDir).toHaveBeenCalledTimes(1);
  });

  it('says when nothing matches', async () => {
    mount(false);
    type('@zzz');
    await flush();
    expect(screen.getByTestId('mention-menu').textContent).toContain('No file in . matches.');
  });
});

describe('images', () => {
  it('an agent without the capability offers no Attach, and a pasted image is refused with why', async () => {
    const { sent } = mount(false);
    expect(screen.queryByTestId('attach')).toBeNull();
    fireEvent.paste(box(), { clipboardData: { files: [png()] } });
    await flush();
    expect(screen.getByTestId('composer-note').textContent).toBe('This agent does not take images.');
    expect(screen.queryByTestId('attachment')).toBeNull();
    expect(sent).toEqual([]);
  });

  it('an agent that takes images: attached, shown, removable, and sent alone without text', async () => {
    const { sent } = mount(true);
    const input = screen.getByTestId('attach-input') as HTMLInputElement;
    fireEvent.change(input, { target: { files: [png(), png()] } });
    await vi.waitFor(() => expect(screen.getAllByTestId('attachment')).toHaveLength(2));
    fireEvent.click(screen.getAllByRole('button', { name: 'Remove shot.png' })[0]!);
    expect(screen.getAllByTestId('attachment')).toHaveLength(1);
    fireEvent.click(screen.getByTestId('send'));
    expect(sent).toHaveLength(1);
    const [text, extras] = sent[0]!;
    expect(text).toBe('');
    expect(extras.images.map((i) => [i.name, i.mimeType, i.size, atob(i.data).length])).toEqual([['shot.png', 'image/png', 7, 7]]);
    expect(screen.queryByTestId('attachment')).toBeNull();
  });

  it('a file that is not an image an agent reads is refused by name', async () => {
    mount(true);
    const input = screen.getByTestId('attach-input') as HTMLInputElement;
    fireEvent.change(input, { target: { files: [new File(['x'], 'icon.bmp', { type: 'image/bmp' })] } });
    await vi.waitFor(() => expect(screen.getByTestId('composer-note').textContent).toBe('icon.bmp is not a PNG, JPEG, GIF or WebP image'));
  });

  it('a dropped file that is not an image is not attached, and the composer says what can be', async () => {
    mount(true);
    const form = box().closest('form')!;
    fireEvent.drop(form, { dataTransfer: { files: [new File(['x'], 'notes.txt', { type: 'text/plain' })], types: ['Files'] } });
    await flush();
    expect(screen.getByTestId('composer-note').textContent).toContain('Only images can be attached');
    expect(screen.queryByTestId('attachment')).toBeNull();
  });
});
