// `@` mentions and the blocks a composed message becomes.
import { describe, expect, it } from 'vitest';
import { completeMention, mentionAt, mentionedPaths, mentionMatches } from '../src/lib/mentions';
import { fileUri, mentionBlock, promptBlocks } from '../src/lib/prompt-blocks';
import type { WorkspaceFile } from '../src/state/types';
import { workspaceEntry as entry } from './fixtures';


describe('mentionAt', () => {
  const cases: [string, string, number | undefined, ReturnType<typeof mentionAt>][] = [
    ['a bare @ lists the top directory', '@', undefined, { start: 0, end: 1, dir: '', prefix: '' }],
    ['after a word and a space', 'look at @REA', undefined, { start: 8, end: 12, dir: '', prefix: 'REA' }],
    ['a directory part', 'fix @src/ma', undefined, { start: 4, end: 11, dir: 'src', prefix: 'ma' }],
    ['an e-mail address is none', 'mail me@example.com', undefined, null],
    ['a finished mention is none', '@README.md and', undefined, null],
    ['the caret inside the mention', '@READ more', 5, { start: 0, end: 5, dir: '', prefix: 'READ' }],
    ['on a new line', 'one\n@x', undefined, { start: 4, end: 6, dir: '', prefix: 'x' }],
  ];
  for (const [name, text, caret, want] of cases) {
    it(name, () => expect(mentionAt(text, caret ?? text.length)).toEqual(want));
  }
});

describe('mentionMatches', () => {
  const entries = [entry('src', 'dir'), entry('.git', 'dir'), entry('README.md'), entry('docs/x'), entry('main.go'), entry('.env')];
  it('starts-with first, then contains, without dot-files', () => {
    expect(mentionMatches(entries, 'm').map((e) => e.path)).toEqual(['main.go', 'README.md']);
    expect(mentionMatches(entries, '').map((e) => e.path)).toEqual(['src', 'README.md', 'docs/x', 'main.go']);
  });
  it('dot-files once a dot is typed', () => {
    expect(mentionMatches(entries, '.e').map((e) => e.path)).toEqual(['.env']);
  });
});

describe('completeMention', () => {
  it('a file ends the mention with a space, a directory keeps it open', () => {
    const q = mentionAt('see @RE', 7)!;
    expect(completeMention('see @RE', q, entry('README.md'))).toEqual({ text: 'see @README.md ', caret: 15 });
    const d = mentionAt('see @sr', 7)!;
    expect(completeMention('see @sr', d, entry('src', 'dir'))).toEqual({ text: 'see @src/', caret: 9 });
  });
  it('text after the caret stays', () => {
    const q = mentionAt('@RE please', 3)!;
    expect(completeMention('@RE please', q, entry('README.md'))).toEqual({ text: '@README.md please', caret: 10 });
  });
});

describe('mentionedPaths', () => {
  const picked = new Set(['README.md', 'src/main.go']);
  it('picked paths the text still names, once each, with trailing punctuation', () => {
    expect(mentionedPaths('read @README.md, then @src/main.go and @README.md.', picked)).toEqual(['README.md', 'src/main.go']);
  });
  it('a picked path deleted from the text, or typed and never picked, is not sent', () => {
    expect(mentionedPaths('read @other.md', picked)).toEqual([]);
  });
});

describe('blocks', () => {
  const file = (content: string, over: Partial<WorkspaceFile> = {}): WorkspaceFile => ({
    path: 'x',
    size: content.length,
    offset: 0,
    length: content.length,
    binary: false,
    encoding: 'utf-8',
    content,
    modifiedAt: '2026-01-01T00:00:00Z',
    truncated: false,
    ...over,
  });
  it('a file URI escapes each segment', () => {
    expect(fileUri('/w/my repo/', 'a b/c#d.md')).toBe('file:///w/my%20repo/a%20b/c%23d.md');
  });
  it('embeds a small text file where the agent takes embedded context', async () => {
    const b = await mentionBlock('notes.md', { cwd: '/w', embed: true, read: () => Promise.resolve(file('a\nb\n')) });
    expect(b).toEqual({ type: 'resource', resource: { uri: 'file:///w/notes.md', text: 'a\nb\n', mimeType: 'text/plain' } });
  });
  const links: [string, Parameters<typeof mentionBlock>[1]][] = [
    ['an agent without embedded context', { cwd: '/w', embed: false, read: () => Promise.resolve(file('a')) }],
    ['a binary file', { cwd: '/w', embed: true, read: () => Promise.resolve(file('AA==', { binary: true, encoding: 'base64' })) }],
    ['a file too big', { cwd: '/w', embed: true, read: () => Promise.resolve(file('a', { truncated: true })) }],
    ['a read that fails', { cwd: '/w', embed: true, read: () => Promise.reject(new Error('gone')) }],
  ];
  for (const [name, src] of links) {
    it(`links ${name}`, async () => {
      const b = await mentionBlock('notes.md', src);
      expect(b.type).toBe('resource_link');
      expect(b.uri).toBe('file:///w/notes.md');
      expect(b.name).toBe('notes.md');
    });
  }
  it('a prompt is its text, its images, then its files; no empty text block', async () => {
    const img = { id: 'i', name: 'a.png', mimeType: 'image/png', data: 'AAAA', size: 3 };
    const got = await promptBlocks('  ', [img], ['x.md'], { cwd: '/w', embed: false });
    expect(got).toEqual([
      { type: 'image', mimeType: 'image/png', data: 'AAAA' },
      { type: 'resource_link', uri: 'file:///w/x.md', name: 'x.md' },
    ]);
  });
});
