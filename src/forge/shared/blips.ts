/**
 * Which failures of a landing are blips worth trying again (the network dropped, the forge answered
 * 5xx or asked to slow down) rather than answers (a refusal, a missing branch, bad credentials).
 * Each driver's `Lander.blip` uses these for what its own clients throw; the queue workers retry a
 * blip with backoff (src/server/workers.ts) and the lander checks before each retry whether the
 * previous attempt landed after all.
 */

/** Error codes of Node and undici for a connection that failed or dropped. */
const NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ENETUNREACH',
  'ENETDOWN',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CLOSED',
]);

/** HTTP statuses that say "not now" rather than "no": a timeout, too many requests, a server or gateway failing. */
export function transientStatus(status: number | undefined): boolean {
  return status !== undefined && (status === 408 || status === 429 || (status >= 500 && status <= 599));
}

/**
 * The connection failure in `error` or its causes (a dropped or refused connection, a timeout, a
 * name that did not resolve), as one short line; null when it is none.
 */
export function networkFailure(error: unknown): string | null {
  let e: unknown = error;
  for (let depth = 0; depth < 6 && e !== null && typeof e === 'object'; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && NETWORK_CODES.has(code)) return code;
    const message = (e as { message?: unknown }).message;
    if (typeof message === 'string' && /other side closed|socket hang up|fetch failed|terminated|network error/i.test(message) && depth > 0)
      return message.split('\n')[0]!.trim();
    e = (e as { cause?: unknown }).cause;
  }
  return null;
}

/** What git says when the network or the remote's HTTP server failed, not the remote's rules. */
const GIT_NETWORK =
  /The requested URL returned error: (5\d\d|408|429)|Could not resolve host|Failed to connect|Connection refused|Connection reset|Connection timed out|Operation timed out|RPC failed|early EOF|the remote end hung up unexpectedly|unexpected disconnect|Empty reply from server|Recv failure|transfer closed|HTTP\/2 stream \d+ was not closed cleanly|gnutls_handshake|SSL_read|error: 5\d\d/i;

/** A git command that failed on the network (fetch, push, ls-remote over HTTP): git's line; null otherwise. */
export function gitNetworkFailure(error: unknown): string | null {
  const stderr = (error as { stderr?: unknown } | null)?.stderr;
  const text = `${typeof stderr === 'string' ? stderr : ''}\n${error instanceof Error ? error.message : ''}`;
  const m = GIT_NETWORK.exec(text);
  if (!m) return null;
  const line = text.split('\n').find((l) => l.includes(m[0])) ?? m[0];
  return line.replace(/^(fatal|error): /, '').trim();
}
