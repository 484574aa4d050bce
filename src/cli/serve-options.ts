/**
 * `railyard serve`'s flag parsing and checks besides the forges' (each forge's description parses
 * its own): organisation tokens, the token file, the port.
 */
import { readFile } from 'node:fs/promises';

export function parseOrgToken(value: string): { org: string; token: string } {
  const at = value.indexOf('=');
  if (at <= 0 || at === value.length - 1) throw new Error(`--org-token: expected ORG=TOKEN, got "${value}"`);
  return { org: value.slice(0, at), token: value.slice(at + 1) };
}

/** The tokens of a token file: one per line, blank lines and `#` comments skipped. */
export async function readTokenFile(path: string | undefined): Promise<string[]> {
  if (path === undefined) return [];
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new Error(`--token-file: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
  const tokens = text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'));
  if (!tokens.length) throw new Error(`--token-file: ${path} holds no token`);
  return tokens;
}

/** Why the server cannot listen on host:port, in one line. */
export function listenError(error: unknown, port: number): string {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'EADDRINUSE') return `port ${port} is in use: stop the other server or use --port 0`;
  if (code === 'EACCES') return `port ${port} needs privileges: use a port above 1023 or --port 0`;
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') return `--host: cannot listen on this machine's address (${code})`;
  return `cannot listen on port ${port}: ${error instanceof Error ? error.message : String(error)}`;
}

/** Null when host:port can be listened on now, else the one-line reason (port 0 always can). */
export async function portInUse(host: string, port: number): Promise<string | null> {
  if (port === 0) return null;
  const { createServer } = await import('node:net');
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', (error) => resolve(listenError(error, port)));
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve(null)));
  });
}

/**
 * The server's ticket settings from `--ticket-api-url`, `--ticket-token-file` and
 * RAILYARD_TICKET_TOKEN (the file wins): a clear error for an unreadable or empty file or a URL
 * that is not http(s).
 */
export async function ticketOptions(apiUrl: string | undefined, tokenFile: string | undefined, envToken: string | undefined): Promise<{ apiUrl?: string; token?: string }> {
  const out: { apiUrl?: string; token?: string } = {};
  if (apiUrl !== undefined) {
    let url: URL;
    try {
      url = new URL(apiUrl);
    } catch {
      throw new Error(`--ticket-api-url: "${apiUrl}" is not a URL (e.g. https://gitlab.example.com or https://acme.atlassian.net)`);
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error(`--ticket-api-url: must be an https:// URL, got ${url.protocol}//`);
    if (url.username || url.password) throw new Error('--ticket-api-url: must not carry a user name or password (the token goes in --ticket-token-file)');
    let end = apiUrl.length;
    while (end > 0 && apiUrl[end - 1] === '/') end--;
    out.apiUrl = apiUrl.slice(0, end);
  }
  if (tokenFile !== undefined) {
    let text: string;
    try {
      text = await readFile(tokenFile, 'utf8');
    } catch (error) {
      throw new Error(`--ticket-token-file: cannot read ${tokenFile} (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
    }
    const token = text.trim();
    if (!token) throw new Error(`--ticket-token-file: ${tokenFile} holds no token`);
    out.token = token;
  } else if (envToken?.trim()) out.token = envToken.trim();
  return out;
}
