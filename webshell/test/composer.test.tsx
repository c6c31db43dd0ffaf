// The composer's slash commands ("/" offers the agent's commands; arrows,
// Enter, Tab, Esc) and the mode and config option pickers next to it.
import { cleanup, fireEvent, screen } from '@testing-library/preact';
import { afterEach, describe, expect, it } from 'vitest';
import { clean, context, ev, FakeApi, flush } from './fixtures';
import { mountPane } from './mount-pane';

afterEach(cleanup);

const commands = [
  { name: 'echo', description: 'Reply with TEXT', input: { hint: 'TEXT' } },
  { name: 'stream', description: 'Stream N chunks', input: { hint: 'N' } },
  { name: 'sleep', description: 'Sleep MS milliseconds' },
  { name: 'options', description: 'Reply with the mode' },
];
const modes = [
  { id: 'default', name: 'Default' },
  { id: 'plan', name: 'Plan' },
];
const model = (current: string) => ({
  id: 'model',
  name: 'Model',
  type: 'select',
  currentValue: current,
  options: [
    { value: 'demo-fast', name: 'Demo fast' },
    { value: 'demo-smart', name: 'Demo smart' },
  ],
});

async function mount() {
  const api = new FakeApi('S');
  api.contextImpl = () =>
    Promise.resolve(context('S', 10, clean(), { availableCommands: commands, availableModes: modes, currentMode: 'default', configOptions: [model('demo-fast')] }));
  const c = await mountPane(api);
  return { api, c };
}

const box = () => screen.getByRole('textbox', { name: 'Message' }) as HTMLTextAreaElement;
const type = (text: string) => fireEvent.input(box(), { target: { value: text } });
const key = (k: string) => fireEvent.keyDown(box(), { key: k });
const items = () => screen.queryAllByRole('option').filter((o) => o.closest('[data-testid="slash-menu"]')).map((o) => o.querySelector('.mono')?.textContent ?? '');
const selected = () => screen.getAllByRole('option').find((o) => o.getAttribute('aria-selected') === 'true')?.textContent ?? '';

describe('slash commands', () => {
  it('"/" lists the agent commands, a word filters them, arrows and Enter pick one without sending', async () => {
    const { api } = await mount();
    expect(screen.queryByTestId('slash-menu')).toBeNull();
    type('/');
    expect(items()).toEqual(['/echo', '/stream', '/sleep', '/options']);
    type('/s');
    expect(items()).toEqual(['/stream', '/sleep', '/options']); // starts with, then contains
    expect(selected()).toContain('/stream');
    key('ArrowDown');
    expect(selected()).toContain('/sleep');
    key('ArrowUp');
    key('ArrowUp'); // wraps to the last
    expect(selected()).toContain('/options');
    key('Enter');
    expect(box().value).toBe('/options ');
    expect(screen.queryByTestId('slash-menu')).toBeNull(); // a space ends the command word
    expect(api.count('prompt')).toBe(0);
    key('Enter'); // now Enter sends
    await flush();
    expect(api.count('prompt')).toBe(1);
  });

  it('Enter on a command typed in full sends it rather than completing it', async () => {
    const { api } = await mount();
    type('/echo');
    expect(items()).toEqual(['/echo']);
    key('Enter');
    await flush();
    expect(api.count('prompt')).toBe(1);
  });

  it('Tab picks, Esc closes the list, and text that is not a command word offers nothing', async () => {
    await mount();
    type('/ec');
    key('Tab');
    expect(box().value).toBe('/echo ');
    type('/st');
    expect(items()).toHaveLength(1);
    key('Escape');
    expect(screen.queryByTestId('slash-menu')).toBeNull();
    type('hello /s');
    expect(screen.queryByTestId('slash-menu')).toBeNull();
    type('/zzz');
    expect(screen.queryByTestId('slash-menu')).toBeNull();
  });

  it('commands announced later (session.options_changed) are offered', async () => {
    const { api } = await mount();
    api.stream.push(ev('S', 11, 'session.options_changed', { availableCommands: [{ name: 'review', description: 'Review the diff' }] }));
    await flush();
    type('/');
    expect(items()).toEqual(['/review']);
  });
});

describe('mode and config option pickers', () => {
  it('show the agent modes and options and set them through the API', async () => {
    const { api } = await mount();
    const mode = screen.getByTestId('mode-picker') as HTMLSelectElement;
    expect(mode.value).toBe('default');
    expect([...mode.options].map((o) => o.textContent)).toEqual(['Default', 'Plan']);
    fireEvent.change(mode, { target: { value: 'plan' } });
    await flush();
    expect(api.calls.filter((c) => c.name === 'setMode').map((c) => c.args)).toEqual([['plan']]);
    expect((screen.getByTestId('mode-picker') as HTMLSelectElement).value).toBe('plan');

    const modelPicker = screen.getByTestId('config-model') as HTMLSelectElement;
    expect(modelPicker.value).toBe('demo-fast');
    fireEvent.change(modelPicker, { target: { value: 'demo-smart' } });
    await flush();
    expect(api.calls.filter((c) => c.name === 'setConfigOption').map((c) => c.args)).toEqual([['model', 'demo-smart']]);
  });

  it('follow the agent (session.options_changed), and are absent when the agent has none', async () => {
    const { api } = await mount();
    api.stream.push(ev('S', 11, 'session.options_changed', { availableModes: modes, currentMode: 'plan', configOptions: [model('demo-smart')] }));
    await flush();
    expect((screen.getByTestId('mode-picker') as HTMLSelectElement).value).toBe('plan');
    expect((screen.getByTestId('config-model') as HTMLSelectElement).value).toBe('demo-smart');
    api.stream.push(ev('S', 12, 'session.options_changed', {}));
    await flush();
    expect(screen.queryByTestId('session-options')).toBeNull();
  });
});
