// A user message with images and files: thumbnails and chips instead of
// the daemon's "[image]" placeholder lines.
import { cleanup, render, screen } from '@testing-library/preact';
import { afterEach, describe, expect, it } from 'vitest';
import { UserText } from '../src/components/UserText';
import { ev, evAction, fold, loaded } from './fixtures';

afterEach(cleanup);

describe('UserText', () => {
  it('without attachments it is the text', () => {
    render(<UserText text={'look\n[image]'} />);
    expect(screen.getByText(/look/).textContent).toContain('[image]');
    expect(screen.queryByTestId('message-attachments')).toBeNull();
  });

  it('images as thumbnails, files as chips, placeholder lines left out', () => {
    render(
      <UserText
        text={'what is this?\n[image]\n[resource]\n[x.go](file:///w/x.go)'}
        attachments={[
          { kind: 'image', mimeType: 'image/png', data: 'AAAA' },
          { kind: 'file', name: 'notes.md', embedded: true },
          { kind: 'file', name: 'x.go', embedded: false },
        ]}
      />,
    );
    expect(screen.getByRole('img', { name: 'Image 1' }).getAttribute('src')).toBe('data:image/png;base64,AAAA');
    const box = screen.getByTestId('message-attachments');
    expect(box.textContent).toContain('notes.md');
    expect(box.textContent).toContain('x.go');
    expect(document.body.textContent).not.toContain('[image]');
    expect(document.body.textContent).not.toContain('[resource]');
    expect(document.body.textContent).toContain('what is this?');
  });
});

describe('turn attachments', () => {
  it('a queued turn keeps its prompt images and files for its message', () => {
    const s0 = loaded('S');
    const s = fold(
      s0,
      evAction(s0, ev('S', 11, 'turn.queued', { promptId: 'p1', kind: 'prompt', prompt: [
        { type: 'text', text: 'hi' },
        { type: 'image', mimeType: 'image/jpeg', data: 'BBBB' },
        { type: 'resource', resource: { uri: 'file:///w/a/b.md', text: 'x' } },
        { type: 'resource_link', uri: 'file:///w/c.go', name: 'c.go' },
      ] })),
    );
    expect(s.turns.p1?.attachments).toEqual([
      { kind: 'image', mimeType: 'image/jpeg', data: 'BBBB' },
      { kind: 'file', name: 'b.md', embedded: true },
      { kind: 'file', name: 'c.go', embedded: false },
    ]);
    expect(s.turns.p1?.text).toBe('hi');
  });
});
