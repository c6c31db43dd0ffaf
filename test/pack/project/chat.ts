// The example a third party writes: connect (the SDK checks the daemon's API
// version), start a session with the demo agent, prompt it, wait for the
// turn, read the reply from the transcript. Shared by the Node and the
// browser entry points.
import { API_VERSION, TetherClient, type Transcript } from '@tether/client';
import { sdk } from '@tether/client';
import type { Health } from '@tether/client/gen';

export interface ChatResult {
  apiVersion: string;
  daemonApiVersion: string;
  state: string;
  reply: string;
  agents: number;
}

export async function chat(baseUrl: string, token: string, cwd: string, text: string): Promise<ChatResult> {
  const client = await TetherClient.connect({ baseUrl, token });
  // A generated operation, called directly with the configured client.
  const health = await sdk.getHealth({ client: client.gen, throwOnError: true });
  const h: Health = health.data;
  const agents = await client.listAgents();
  const created = await client.createSession({ agentProfileId: 'demo', cwd, title: 'pack test' });
  const session = client.session(created.id);
  const accepted = await session.prompt(text, { promptId: 'pack-1' });
  const end = await session.waitForTurn(accepted.promptId);
  const t: Transcript = await session.transcript();
  const reply = t.messages
    .filter((m) => m.role === 'agent' && m.promptId === accepted.promptId)
    .map((m) => m.text)
    .join('');
  await session.close();
  return { apiVersion: API_VERSION, daemonApiVersion: h.apiVersion, state: end.type, reply, agents: agents.agents.length };
}
