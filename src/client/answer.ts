/**
 * Reading an answer's body with a cap: a server (or something posing as one) that sends more than
 * the client will hold gets an error as soon as its Content-Length says so, or as soon as the
 * bytes read pass the cap, never the whole answer in memory. The CLI and the Action share it (the
 * client reads every body through here), so both stop the same way.
 */
import { ClientError } from './errors.js';

/** The cap when RAILYARD_MAX_RESPONSE_MIB is not set: 64 MiB of one answer. */
export const DEFAULT_MAX_RESPONSE_MIB = 64;
export const MAX_RESPONSE_ENV = 'RAILYARD_MAX_RESPONSE_MIB';

const MIB = 1024 * 1024;

/** The answer passed the cap; what was read is dropped and the connection closed. */
export class ResponseTooLargeError extends ClientError {
  override name = 'ResponseTooLargeError';
  constructor(
    operation: string,
    readonly maxBytes: number,
  ) {
    super(
      `the server's answer to ${operation} passed ${mibText(maxBytes)} MiB; stopped reading (${MAX_RESPONSE_ENV} raises the cap)`,
      operation,
    );
  }
}

const mibText = (bytes: number) => String(Math.round((bytes / MIB) * 1000) / 1000);

/**
 * The cap in bytes from `RAILYARD_MAX_RESPONSE_MIB` (a positive number of MiB, fractions allowed);
 * 64 MiB when unset or empty. Throws an Error naming the variable for anything else.
 */
export function maxResponseBytes(
  env: Record<string, string | undefined> = globalThis.process?.env ?? {},
): number {
  const text = env[MAX_RESPONSE_ENV]?.trim();
  if (!text) return DEFAULT_MAX_RESPONSE_MIB * MIB;
  const mib = /^\d+(\.\d+)?$/.test(text) ? Number(text) : NaN;
  if (!(mib > 0) || !Number.isFinite(mib)) {
    throw new Error(`${MAX_RESPONSE_ENV}: expected a positive number of MiB (e.g. 64 or 0.5), got "${text}"`);
  }
  return Math.max(1, Math.floor(mib * MIB));
}

/**
 * The body of `response` as text (UTF-8, as fetch's text() decodes it), read at most `maxBytes`:
 * a Content-Length above it fails before reading, and the bytes are counted as they arrive (a
 * chunked answer says nothing in advance). Past the cap the stream is cancelled, which closes the
 * connection. `deadline` (epoch ms) bounds the whole read: a body that trickles in gets the same
 * error as one that never starts.
 */
export async function readCapped(
  response: Response,
  operation: string,
  maxBytes: number,
  onTimeout?: () => Error,
  deadline?: number,
): Promise<string> {
  const declared = Number(response.headers.get('content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > maxBytes) {
    await response.body?.cancel().catch(() => undefined);
    throw new ResponseTooLargeError(operation, maxBytes);
  }
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut =
    deadline !== undefined && onTimeout
      ? new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(onTimeout()), Math.max(0, deadline - Date.now()));
        })
      : undefined;
  timedOut?.catch(() => undefined); // handled by the race; never an unhandled rejection after the loop ends
  try {
    for (;;) {
      const { done, value } = await (timedOut ? Promise.race([reader.read(), timedOut]) : reader.read());
      if (done) break;
      total += value.byteLength;
      if (total > maxBytes) throw new ResponseTooLargeError(operation, maxBytes);
      chunks.push(value);
    }
  } catch (error) {
    chunks.length = 0;
    await reader.cancel().catch(() => undefined);
    throw error;
  } finally {
    if (timer) clearTimeout(timer);
  }
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  chunks.length = 0;
  return new TextDecoder().decode(bytes);
}

/**
 * The first `maxBytes` of a body as text, the rest left unread (the stream is cancelled): enough of
 * an error answer for its first line, whatever its length.
 */
export async function readHead(response: Response, maxBytes: number): Promise<string> {
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    while (total < maxBytes) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value.subarray(0, maxBytes - total));
      total += Math.min(value.byteLength, maxBytes - total);
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  return new TextDecoder().decode(bytes);
}
