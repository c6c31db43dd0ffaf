#!/usr/bin/env node
// Continue an interrupted session.
//
//   TETHER_URL=... TETHER_TOKEN=... TETHER_SESSION=<id> node examples/continue.mjs
//
// With TETHER_SESSION, continues that session's interrupted turn (e.g. after
// the daemon was killed during a turn). Without it, creates the interruption
// itself: a demo-agent session whose agent crashes mid-turn (`/crash`).
// Streams the continuation's reply to stdout; exits 0 when it completes.
import { TetherClient } from '@tether/client';

const { TETHER_URL, TETHER_TOKEN } = process.env;
if (!TETHER_URL || !TETHER_TOKEN) {
  console.error('set TETHER_URL and TETHER_TOKEN');
  process.exit(2);
}
const client = new TetherClient({ baseUrl: TETHER_URL, token: TETHER_TOKEN });

let session;
if (process.env.TETHER_SESSION) {
  session = client.session(process.env.TETHER_SESSION);
} else {
  const s = await client.createSession({ agentProfileId: 'demo', cwd: process.env.TETHER_CWD || process.cwd(), title: 'continue.mjs' });
  session = client.session(s.id);
  await session.prompt('/crash', { promptId: 'will-crash' });
  const end = await session.waitForTurn('will-crash');
  console.error(`turn will-crash ended: ${end.type}${end.type === 'turn.interrupted' ? ` (${end.data.reason})` : ''}`);
}
console.error(`session ${session.id}`);

const ctx = await session.context();
console.error(`recovery: ${ctx.recovery.kind}: ${ctx.recovery.notice}`);

// The promptId makes a retry after an ambiguous failure safe.
const promptId = `continue-${Date.now()}`;
let outcome = await session.continue({ promptId });
if (outcome.kind === 'unknown' && outcome.retrySafe) {
  console.error(`continue: no answer (${outcome.error}); retrying with the same promptId`);
  outcome = await session.continue({ promptId });
}
if (outcome.kind === 'declined') {
  console.error(`continue declined: ${outcome.reason} — ${outcome.recovery?.notice ?? ''}`);
  process.exit(1);
}
if (outcome.kind === 'unknown') {
  console.error('continue: outcome unknown', outcome.error);
  process.exit(1);
}
console.error(`continuing ${outcome.interruption.promptId} as ${outcome.promptId}`);

let last;
for await (const ev of session.events(outcome.cursor ? { cursor: outcome.cursor } : {})) {
  if ((ev.type === 'message.added' || ev.type === 'message.chunk') && ev.data.promptId === outcome.promptId && ev.data.role === 'agent') {
    process.stdout.write(ev.data.text);
  }
  const ended = ev.type === 'turn.completed' || ev.type === 'turn.failed' || ev.type === 'turn.cancelled' || ev.type === 'turn.interrupted';
  if (ended && ev.data.promptId === outcome.promptId) {
    last = ev;
    break;
  }
}
process.stdout.write('\n');
console.error(`[${last?.type}]`);
process.exit(last?.type === 'turn.completed' ? 0 : 1);
