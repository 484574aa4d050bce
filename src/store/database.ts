/** Opening the database a command names (data dir or --database-url), and telling busy or unreachable databases apart. */
import { isPostgresUrl } from './connect.js';
import { openStore } from './store.js';

/** A database URL without its password, for messages. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'the given URL';
  }
}

/** The embedded SQLite under dataDir, or PostgreSQL; one line a person can act on when it fails. */
export async function openDatabase(dataDir: string, databaseUrl: string | undefined, poolSize = 10, statementTimeoutSeconds = 30) {
  if (databaseUrl === undefined) return openStore({ dataDir });
  if (!isPostgresUrl(databaseUrl)) {
    throw new Error(`--database-url: expected postgres://USER:PASSWORD@HOST:PORT/DATABASE, got ${redactUrl(databaseUrl)}`);
  }
  try {
    return await openStore({ databaseUrl, poolSize, statementTimeoutMs: statementTimeoutSeconds * 1000 });
  } catch (error) {
    const where = redactUrl(databaseUrl);
    if (isDatabaseUnavailable(error)) throw new Error(`cannot reach the database at ${where}: ${rootReason(error)}`);
    throw new Error(`cannot use the database at ${where}: ${rootReason(error)}`);
  }
}

const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  '57P01',
  '57P02',
  '57P03',
  '53300',
]);

/**
 * Whether a failed query means the database is out of reach for now (down, restarting, out of
 * connections), as opposed to a bug: the server answers such requests 503 and nothing is lost,
 * since nothing was committed.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (let e = error, depth = 0; e && depth < 5; depth++) {
    if (typeof e !== 'object') return false;
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (typeof code === 'string' && (UNAVAILABLE_CODES.has(code) || code.startsWith('08'))) return true;
    if (typeof message === 'string' && /^(Connection terminated|timeout exceeded when trying to connect)/.test(message)) return true;
    if (e instanceof AggregateError && e.errors.some((inner) => isDatabaseUnavailable(inner))) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/** PostgreSQL: deadlock, serialization failure, lock timeout, statement timeout. */
const BUSY_CODES = new Set(['40P01', '40001', '55P03', '57014']);

/**
 * Whether the database gave up on a statement that waited for other transactions — PostgreSQL's
 * codes above, or SQLite's SQLITE_BUSY (and its extended codes) once its busy timeout passed while
 * another connection held the write lock (the webhook deliverer's thread, `railyard token`, a
 * backup): nothing was committed and the same request may well succeed at once, so the server
 * answers 503 with a short Retry-After, not 500.
 */
export function isDatabaseBusy(error: unknown): boolean {
  for (let e = error, depth = 0; e && typeof e === 'object' && depth < 5; depth++) {
    const { code } = e as { code?: unknown };
    if (typeof code === 'string' && (BUSY_CODES.has(code) || code === 'SQLITE_BUSY' || code.startsWith('SQLITE_BUSY_'))) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/** The innermost reason of an error chain, on one line (a refused connection says which address). */
function rootReason(error: unknown): string {
  let e: unknown = error;
  for (let depth = 0; depth < 5 && e instanceof Error && e.cause !== undefined; depth++) e = e.cause;
  if (e instanceof AggregateError && e.errors.length) e = e.errors[0];
  const text = e instanceof Error ? e.message || (e as NodeJS.ErrnoException).code || e.name : String(e);
  return text.split('\n')[0];
}
