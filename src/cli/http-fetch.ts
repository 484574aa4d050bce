/**
 * The CLI's HTTP transport: fetch's contract over node:http/node:https, given to the API client
 * (ky's `fetch` option) by base-command. Node's own fetch (undici) costs a CLI run about 0.07 CPU-s
 * before its first byte (its HTTP parser is WebAssembly, compiled in every process), a quarter of
 * a whole command; node:http is already in the binary.
 *
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
      readBody(res).then(
        (data) => {
          if (settled) return;
          settled = true;
          signal.removeEventListener('abort', onAbort);
          try {
            const answer = new Headers();
            for (let i = 0; i < res.rawHeaders.length; i += 2)
              answer.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
            resolve(
              new Response(NULL_BODY.has(status) || request.method === 'HEAD' ? null : data, {
                status,
                statusText: res.statusMessage ?? '',
                headers: answer,
              }),
            );
          } catch (error) {
            reject(new TypeError('fetch failed', { cause: error }));
          }
        },
        (error: unknown) => fail(new TypeError('terminated', { cause: error })),
      );
    });
    req.on('error', (error) => fail(new TypeError('fetch failed', { cause: error })));
    signal.addEventListener('abort', onAbort, { once: true });
    req.end(body);
  });
}

/** The whole answer, decoded as fetch decodes it (gzip, deflate; anything else as it came). */
async function readBody(res: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of res) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks);
  const encoding = (res.headers['content-encoding'] ?? '').trim().toLowerCase();
  if (raw.length === 0 || !['gzip', 'x-gzip', 'deflate'].includes(encoding)) return raw;
  const zlib = await import('node:zlib');
  if (encoding === 'deflate')
    return raw[0] !== undefined && (raw[0] & 0x0f) === 0x08
      ? zlib.inflateSync(raw)
      : zlib.inflateRawSync(raw);
  return zlib.gunzipSync(raw);
}
