#!/usr/bin/env node
// Chat with an agent (the built-in demo agent by default), streaming its
// reply to stdout.
//
//   TETHER_URL=http://127.0.0.1:7777 TETHER_TOKEN=... node examples/chat.mjs "hello there"
//
// Environment: TETHER_URL, TETHER_TOKEN (required); TETHER_SESSION (reuse a
// session), TETHER_AGENT (profile, default "demo"), TETHER_CWD (working
// directory of a new session, default the current one).
// Exits 0 when the turn completes, 1 when it fails, is cancelled or interrupted.
import { TetherClient, TetherProblem } from '@tether/client';

const { TETHER_URL, TETHER_TOKEN } = process.env;
if (!TETHER_URL || !TETHER_TOKEN) {
  console.error('set TETHER_URL and TETHER_TOKEN');
  process.exit(2);
}
const text = process.argv.slice(2).join(' ') || 'hello, what is in this directory?';

const client = new TetherClient({ baseUrl: TETHER_URL, token: TETHER_TOKEN });
try {
  const id =
    process.env.TETHER_SESSION ||
    (
      await client.createSession({
        agentProfileId: process.env.TETHER_AGENT || 'demo',
        cwd: process.env.TETHER_CWD || process.cwd(),
        title: 'chat.mjs',
      })
    ).id;
  const session = client.session(id);
  console.error(`session ${id}`);

  const promptId = `chat-${Date.now()}`;
  const accepted = await session.prompt(text, { promptId });

  // Stream from the event that admitted the turn: everything of this turn follows it.
  const stream = session.events({ cursor: accepted.cursor });
  let outcome;
  for await (const ev of stream) {
    if (ev.type === 'message.added' || ev.type === 'message.chunk') {
      if (ev.data.promptId === promptId && ev.data.role === 'agent') process.stdout.write(ev.data.text);
    } else if (ev.type === 'tool_call.started' && ev.data.promptId === promptId) {
      console.error(`\n[tool] ${ev.data.title}`);
    } else if (
      (ev.type === 'turn.completed' || ev.type === 'turn.failed' || ev.type === 'turn.cancelled' || ev.type === 'turn.interrupted') &&
      ev.data.promptId === promptId
    ) {
      outcome = ev;
      break;
    }
  }
  process.stdout.write('\n');
  console.error(`[${outcome?.type ?? 'stream ended'}]`);
  process.exit(outcome?.type === 'turn.completed' ? 0 : 1);
} catch (err) {
  console.error(err instanceof TetherProblem ? `tetherd: ${err.status} ${err.code}: ${err.detail ?? ''}` : err);
  process.exit(1);
}
