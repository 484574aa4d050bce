/**
 * The GitLab emulator's git over HTTP: `clone`/`fetch`/`push` of a project through `git
 * http-backend`, with GitLab's answers to a wrong, expired or under-scoped token and to a project
 * the user cannot see, and a push processed (MR updates, hooks, CI) before git's answer ends.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { relative } from 'node:path';
import { basicCredentials, serveHttpBackend } from '../emulator-git/index.js';
import type { LandingFaults } from './faults.js';
import type { Mrs } from './mr.js';
import { ACCESS, hasScope, SCOPES, tokenExpired, type Project, type World } from './world.js';

export async function serveGit(
  e: { world: World; mrs: Mrs; landingFaults: LandingFaults },
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  rest: string,
  query: string,
): Promise<void> {
  const p: Project | undefined = e.world.projectByPath(path);
  const token = basicPassword(req.headers.authorization);
  const found = token === null ? undefined : e.world.tokens.get(token);
  const isPush = rest === '/git-receive-pack' && req.method === 'POST';
  const pushing = isPush || (rest === '/info/refs' && query.includes('service=git-receive-pack'));
  // An expired token, or one without a repository scope, is refused like a wrong one.
  const info = found && !tokenExpired(found) && hasScope(found, SCOPES.gitRead) ? found : undefined;
  if (!info) {
    req.resume();
    res.writeHead(401, { 'www-authenticate': 'Basic realm="GitLab"', 'content-type': 'text/plain' });
    res.end(
      req.headers.authorization
        ? "HTTP Basic: Access denied. If a password was provided for Git authentication, the password was incorrect or you're required to use a token instead of a password. If a token was provided, it was either incorrect, expired, or improperly scoped.\n"
        : 'HTTP Basic: Access denied\n',
    );
    return;
  }
  if (!p || e.world.accessLevel(p, info.userId) < ACCESS.reporter) {
    req.resume();
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end("The project you were looking for could not be found or you don't have permission to view it.\n");
    return;
  }
  if (pushing && !hasScope(info, SCOPES.gitWrite)) {
    req.resume();
    res.writeHead(403, { 'content-type': 'text/plain' });
    res.end('You are not allowed to push code to this project.\n');
    return;
  }
  const user = e.world.mustUser(info.userId);
  // A push is processed (MR updates, hooks, CI) before git's answer ends, so a test's push returns
  // with GitLab's state already updated.
  const afterPush = isPush
    ? () => e.world.track(e.world.locked(p, () => e.mrs.syncRefs(p, user)))
    : undefined;
  const serve = (rq: IncomingMessage, rs: ServerResponse) =>
    serveHttpBackend(e.world.git, rq, rs, {
      projectRoot: e.world.reposRoot,
      // The repository stays where it was created: a moved project's new path is a route to it.
      pathInfo: `/${relative(e.world.reposRoot, p.dir)}${rest}`,
      query,
      remoteUser: user.username,
      beforeEnd: afterPush,
    });
  if (isPush && e.landingFaults.pending(p.pathWithNamespace))
    return e.landingFaults.serve(p.pathWithNamespace, req, res, serve);
  await serve(req, res);
}

/** The password of HTTP Basic auth (GitLab takes any user name with a token as the password). */
function basicPassword(header: string | undefined): string | null {
  return basicCredentials(header)?.password || null;
}
