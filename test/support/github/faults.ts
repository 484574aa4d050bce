// Landing faults of the GitHub emulator (failLanding): the next landing calls of a repository —
// `PATCH git/refs/heads/*` and `PUT pulls/{n}/merge` — fail the way a blip of GitHub or the network
// would: answered 502/503 (GitHub's HTML error page) or the connection dropped, either before
// anything happens or after the call was carried out (the branch moved, the PR merged, webhooks sent)
// with only the answer lost.
import type { IncomingMessage, ServerResponse } from 'node:http';

/** How the emulator fails a landing call (failLanding). */
export interface LandingFault {
  times?: number;
  answer?: 502 | 503 | 'drop';
  /** Carry the call out first, then fail its answer. */
  after?: boolean;
}

export interface Armed {
  answer: 502 | 503 | 'drop';
  after: boolean;
}

export class LandingFaults {
  /** Faults still to happen, per `owner/repo` (lower case), oldest first. */
  private readonly armed = new Map<string, Armed[]>();

  /** Arms `times` (default 1) faults on the repository; `times: 0` clears those still armed. */
  arm(owner: string, repo: string, fault: LandingFault): void {
    const key = `${owner}/${repo}`.toLowerCase();
    if (fault.times === 0) {
      this.armed.delete(key);
      return;
    }
    const list = this.armed.get(key) ?? [];
    for (let i = 0; i < (fault.times ?? 1); i++)
      list.push({ answer: fault.answer ?? 502, after: fault.after ?? false });
    this.armed.set(key, list);
  }

  /** The fault this REST request meets, taken off the list; null for most requests. */
  take(method: string, template: string, path: string): Armed | null {
    const landing =
      (method === 'PATCH' &&
        template === '/repos/{owner}/{repo}/git/refs/{ref}' &&
        /\/git\/refs\/heads\//.test(path)) ||
      (method === 'PUT' && template === '/repos/{owner}/{repo}/pulls/{pull_number}/merge');
    if (!landing) return null;
    const m = /^\/repos\/([^/]+)\/([^/]+)\//.exec(path);
    const list = m ? this.armed.get(`${m[1]}/${m[2]}`.toLowerCase()) : undefined;
    return list?.shift() ?? null;
  }

  /** Fails the answer: the connection closed, or GitHub's HTML error page. */
  static answer(fault: Armed, req: IncomingMessage, res: ServerResponse): void {
    if (fault.answer === 'drop') {
      req.socket.destroy();
      return;
    }
    res.writeHead(fault.answer, { 'content-type': 'text/html' });
    res.end(
      `<html><body><h1>${fault.answer} ${fault.answer === 502 ? 'Bad Gateway' : 'Service Unavailable'}</h1></body></html>\n`,
    );
  }
}
