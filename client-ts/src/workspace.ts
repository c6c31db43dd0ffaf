import * as sdk from './gen/sdk.gen.js';
import type { GitDiff, GitLog, GitStatus, WorkspaceEntry, WorkspaceFile, WorkspaceListing } from './gen/types.gen.js';
import type { CallOptions, TetherClient } from './client.js';

/** Options of {@link WorkspaceClient.read}: a byte range (default: from 0, up to 1 MiB). */
export interface ReadRange {
  offset?: number;
  length?: number;
}

/** Options of {@link WorkspaceClient.diff}. */
export interface DiffOptions {
  /** The commit to compare the working tree with (default HEAD). */
  against?: string;
  /**
   * Compare with this turn's checkpoint (a promptId) instead of a commit:
   * what the turn changed; the answer says whether HEAD moved since.
   */
  turn?: string;
  /**
   * With `turn`: compare with this later turn's checkpoint instead of the
   * working tree, i.e. what `turn` changed when `toTurn` is the next turn.
   */
  toTurn?: string;
  /** Only this file or directory, relative to the session's directory. */
  path?: string;
  /** Include the patch text. */
  patch?: boolean;
}

/**
 * A session's workspace (docs/workspace.md): its files and git state,
 * served by the session's executor whether or not the agent runs. Paths are
 * relative to the session's directory; refusals are TetherProblems with a
 * workspace_* code.
 */
export class WorkspaceClient {
  readonly client: TetherClient;
  readonly sessionId: string;

  constructor(client: TetherClient, sessionId: string) {
    this.client = client;
    this.sessionId = sessionId;
  }

  /** GET /session/{id}/workspace/files: a directory's entries ('' is the session's directory). */
  list(path = '', o?: CallOptions): Promise<WorkspaceListing> {
    return this.client.call(
      (signal) => sdk.listWorkspaceFiles({ client: this.client.gen, path: { id: this.sessionId }, query: { path }, signal }),
      o,
    );
  }

  /** GET /session/{id}/workspace/file: a byte range of a file. */
  read(path: string, range: ReadRange = {}, o?: CallOptions): Promise<WorkspaceFile> {
    return this.client.call(
      (signal) =>
        sdk.readWorkspaceFile({ client: this.client.gen, path: { id: this.sessionId }, query: { path, ...range }, signal }),
      o,
    );
  }

  /** Reads a whole text file, range by range (refuses a binary one). */
  async readText(path: string, o?: CallOptions): Promise<string> {
    let offset = 0;
    const parts: Uint8Array[] = [];
    for (;;) {
      const f = await this.read(path, { offset }, o);
      if (f.binary) throw new Error(`${path} is a binary file`);
      parts.push(f.encoding === 'base64' ? Uint8Array.from(atob(f.content), (ch) => ch.charCodeAt(0)) : new TextEncoder().encode(f.content));
      offset += f.length;
      if (!f.truncated || f.length === 0) break;
    }
    const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
      all.set(p, at);
      at += p.length;
    }
    return new TextDecoder().decode(all);
  }

  /** GET /session/{id}/workspace/stat: one path (a final symlink as itself). */
  stat(path: string, o?: CallOptions): Promise<WorkspaceEntry> {
    return this.client.call(
      (signal) => sdk.statWorkspacePath({ client: this.client.gen, path: { id: this.sessionId }, query: { path }, signal }),
      o,
    );
  }

  /** GET /session/{id}/workspace/git/status. */
  gitStatus(o?: CallOptions): Promise<GitStatus> {
    return this.client.call((signal) => sdk.getGitStatus({ client: this.client.gen, path: { id: this.sessionId }, signal }), o);
  }

  /** GET /session/{id}/workspace/git/diff: the working tree (untracked files included) against a commit or a turn's checkpoint. */
  diff(opts: DiffOptions = {}, o?: CallOptions): Promise<GitDiff> {
    return this.client.call(
      (signal) => sdk.getGitDiff({ client: this.client.gen, path: { id: this.sessionId }, query: opts, signal }),
      o,
    );
  }

  /** GET /session/{id}/workspace/git/log: the newest commits (default 50). */
  log(limit?: number, o?: CallOptions): Promise<GitLog> {
    return this.client.call(
      (signal) =>
        sdk.getGitLog({ client: this.client.gen, path: { id: this.sessionId }, ...(limit ? { query: { limit } } : {}), signal }),
      o,
    );
  }
}
