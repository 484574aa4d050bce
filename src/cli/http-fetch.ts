/**
 * The CLI's HTTP transport: fetch's contract over node:http/node:https, given to the API client
 * (ky's `fetch` option) by base-command. Node's own fetch (undici) costs a CLI run about 0.07 CPU-s
 * before its first byte (its HTTP parser is WebAssembly, compiled in every process), a quarter of
 * a whole command; node:http is already in the binary.
 *
 * The body streams as fetch's does (so the client can stop reading at its cap, client/answer.ts).
 * It behaves as fetch does where the client can tell: a request that fails before an answer
 * rejects with TypeError('fetch failed') whose `cause` is the socket's error (ECONNREFUSED, a TLS
 * error: client/core.ts reads codes there); an abort rejects with the signal's reason; gzip and
 * deflate answers are decoded (fetch asks for them, so does this). A redirect is left to fetch
 * itself (the server did not act on a request it redirected), as is any input that is not an
 * http(s) Request.
 */
import type { IncomingMessage } from 'node:http';

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/** Statuses whose Response must have no body (the Response constructor refuses one). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

export async function nodeFetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
  // ky passes its Request and an object of the options a Request does not know (none of ours).
  if (!(input instanceof Request) || (init && Object.keys(init).length > 0)) return fetch(input, init);
  const request = input;
  const url = new URL(request.url);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return fetch(request);
  const { signal } = request;
  signal.throwIfAborted();
  const body = request.body ? Buffer.from(await request.arrayBuffer()) : undefined;
  const headers: Record<string, string> = { accept: '*/*', 'accept-encoding': 'gzip, deflate' };
  for (const [name, value] of request.headers) headers[name] = value;
  if (body) headers['content-length'] = String(body.length);
  const { request: send } =
    url.protocol === 'https:' ? await import('node:https') : await import('node:http');

  return new Promise<Response>((resolve, reject) => {
    let settled = false;
    const fail = (error: unknown) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      reject(error);
    };
    const onAbort = () => {
      req.destroy();
      fail(signal.reason);
    };
    // After the headers an abort still closes the connection: the body's reader sees it end in error.
    const req = send(url, { method: request.method, headers }, (res) => {
      const status = res.statusCode ?? 0;
      if (REDIRECTS.has(status) && res.headers.location && request.redirect !== 'manual') {
        res.resume();
        settled = true;
        signal.removeEventListener('abort', onAbort);
        // A Blob, not the Buffer: Node 20's fetch fails to re-send a typed-array body on a redirect.
        resolve(
          fetch(request.url, {
            method: request.method,
            headers: request.headers,
            body: body && new Blob([body]),
            signal,
            redirect: request.redirect,
          }),
        );
        return;
      }
      // The body streams: the client counts what it reads and stops at its cap (client/answer.ts).
      settled = true;
      try {
        const answer = new Headers();
        for (let i = 0; i < res.rawHeaders.length; i += 2)
          answer.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
        const empty = NULL_BODY.has(status) || request.method === 'HEAD';
        if (empty) {
          res.resume();
          signal.removeEventListener('abort', onAbort);
        }
        const body = empty ? null : bodyStream(res, () => signal.removeEventListener('abort', onAbort));
        resolve(new Response(body, { status, statusText: res.statusMessage ?? '', headers: answer }));
      } catch (error) {
        res.destroy();
        signal.removeEventListener('abort', onAbort);
        reject(new TypeError('fetch failed', { cause: error }));
      }
    });
    req.on('error', (error) => fail(new TypeError('fetch failed', { cause: error })));
    signal.addEventListener('abort', onAbort, { once: true });
    req.end(body);
  });
}

/**
 * The answer's body as a web stream, decoded as fetch decodes it (gzip, deflate; anything else as
 * it came), one chunk at a time as the reader asks: nothing is read ahead of it, and cancelling
 * it closes the connection. A failure while reading is fetch's TypeError('terminated').
 */
function bodyStream(res: IncomingMessage, onEnd: () => void): ReadableStream<Uint8Array> {
  const chunks = decoded(res)[Symbol.asyncIterator]();
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    onEnd();
  };
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const next = await chunks.next();
          if (next.done) {
            end();
            controller.close();
          } else
            controller.enqueue(
              new Uint8Array(next.value.buffer, next.value.byteOffset, next.value.byteLength),
            );
        } catch (error) {
          end();
          res.destroy();
          controller.error(new TypeError('terminated', { cause: error }));
        }
      },
      async cancel() {
        end();
        res.destroy();
        await chunks.return?.(undefined).catch(() => undefined);
      },
    },
    { highWaterMark: 0 },
  );
}

/** The chunks of a body, decoded by its content-encoding. */
async function* decoded(res: IncomingMessage): AsyncGenerator<Buffer> {
  const encoding = (res.headers['content-encoding'] ?? '').trim().toLowerCase();
  if (!['gzip', 'x-gzip', 'deflate'].includes(encoding)) {
    for await (const chunk of res) yield chunk as Buffer;
    return;
  }
  const raw = res[Symbol.asyncIterator]();
  const first = await raw.next();
  if (first.done) return; // an empty body is no stream of either kind
  const head = first.value as Buffer;
  const zlib = await import('node:zlib');
  // deflate as servers send it: a zlib stream, or the raw deflate some send instead.
  const decoder =
    encoding === 'deflate'
      ? (head[0]! & 0x0f) === 0x08
        ? zlib.createInflate()
        : zlib.createInflateRaw()
      : zlib.createGunzip();
  const { Readable } = await import('node:stream');
  const source = Readable.from(
    (async function* () {
      yield head;
      for (;;) {
        const next = await raw.next();
        if (next.done) return;
        yield next.value as Buffer;
      }
    })(),
  );
  source.on('error', (error) => decoder.destroy(error));
  try {
    for await (const chunk of source.pipe(decoder)) yield chunk as Buffer;
  } finally {
    source.destroy();
    decoder.destroy();
  }
}
