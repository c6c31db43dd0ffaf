// One session's ChatPane on a FakeApi, with its stream open: what the pane
// tests (banners, composer, queue) start from.
import { render } from '@testing-library/preact';
import { AgentsContext, ChatPane } from '../src/components/ChatPane';
import { LangContext } from '../src/i18n';
import { SessionController } from '../src/state/session-controller';
import type { AgentProfile } from '../src/state/types';
import { type FakeApi, flush } from './fixtures';

/** Renders the pane of api's session in English; agents feeds AgentsContext. */
export async function mountPane(api: FakeApi, agents: Record<string, AgentProfile> = {}): Promise<SessionController> {
  const c = new SessionController(api);
  c.start();
  await flush();
  api.stream.setState('catching_up');
  api.stream.setState('open');
  await flush();
  render(
    <LangContext.Provider value="en">
      <AgentsContext.Provider value={agents}>
        <ChatPane controller={c} shownSessionId={api.id} isMain active onFocus={() => {}} onStartNew={() => {}} onEndSession={() => {}} />
      </AgentsContext.Provider>
    </LangContext.Provider>,
  );
  await flush();
  return c;
}
