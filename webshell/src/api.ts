// The one place that constructs the SDK client; everything else talks to
// the narrow interfaces in state/ (so tests can pass fakes).
import { TetherClient } from '@tether/client';
import type { SessionApi, SessionUpdate, WorkspaceApi } from './state/types';
import type { TasksApi } from './state/tasks-state';
import type { InboxApi } from './state/inbox-state';
import { sharedGlobalEvents } from './lib/shared-global';

export function makeClient(token: string, baseUrl = window.location.origin): TetherClient {
  return new TetherClient({
    baseUrl,
    token,
    timeoutMs: 60_000,
    // Come back quickly after a daemon restart.
    streamDefaults: { backoff: { initialMs: 250, maxMs: 3000 } },
  });
}

export function sessionApi(client: TetherClient, id: string): SessionApi {
  // PATCH /session/{id} is the client's, not the SessionClient's.
  return Object.assign(client.session(id), { update: (body: SessionUpdate) => client.updateSession(id, body) });
}

/** A session's files, git state and terminals: the SDK's SessionClient has them. */
export function workspaceApi(client: TetherClient, id: string): WorkspaceApi {
  return client.session(id);
}

export function tasksApi(client: TetherClient, token: string): TasksApi {
  return {
    listTasks: () => client.listTasks(),
    listSessions: (p) => client.listSessions(p),
    updateSession: (id, body) => client.updateSession(id, body),
    getTask: (id) => client.getTask(id),
    getSession: (id) => client.getSession(id),
    // One GET /events per browser, shared by the tabs (see shared-global.ts).
    globalEvents: (o) => sharedGlobalEvents(client, `${client.baseUrl} ${token}`, o),
  };
}

/** GET /inbox and what its items offer: answer a permission, continue a turn, cancel a stalled one. */
export function inboxApi(client: TetherClient): InboxApi {
  return {
    listInbox: (p) => client.listInbox(p),
    answerPermission: (sessionId, requestId, optionId) => client.session(sessionId).answerPermission(requestId, { optionId }),
    continueTurn: (sessionId) => client.session(sessionId).continue(),
    // As the pane's Stop: the prompts queued behind it stay queued.
    cancelTurn: (sessionId) => client.session(sessionId).cancel({ keepQueue: true }),
  };
}
