/** Serving the built dashboard (build/web) next to the API. */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { negotiate } from '@fastify/accept-negotiator';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** The built dashboard next to the built server (build/web), if it was built. */
export function builtWebRoot(): string | undefined {
  const dir = fileURLToPath(new URL('../../web', import.meta.url));
  return existsSync(join(dir, 'index.html')) ? dir : undefined;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
};

interface Asset {
  body: Buffer;
  gzip: Buffer | null;
  type: string;
  immutable: boolean;
}

/**
 * Everything the page may load comes from this server: no CDN, no inline script, no other origin
 * (the page works air-gapped, and an injected script cannot send the token anywhere else).
 */
const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : [path];
  });
}

/** index.html and the hashed files under /assets/ of a built dashboard, read and gzipped. */
function readAssets(root: string | undefined): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  if (!root) return assets;
  for (const file of walk(root)) {
    const url = '/' + relative(root, file).split(sep).join('/');
    const ext = url.slice(url.lastIndexOf('.'));
    const type = TYPES[ext];
    if (!type || ext === '.map') continue;
    const body = readFileSync(file);
    assets.set(url, {
      body,
      gzip: body.length > 1024 ? gzipSync(body, { level: 9 }) : null,
      type,
      immutable: url.startsWith('/assets/'),
    });
  }
  return assets;
}

/**
 * Serves the web dashboard (built by `npm run build` into build/web) at `/`: index.html and the
 * hashed files under /assets/, read on the first request for one of them and kept gzipped in
 * memory (not at start: a server that nobody opens in a browser, such as every test server, never
 * pays for reading and compressing them). Without a built dashboard, `/` says how to build it.
 */
export function serveDashboard(app: FastifyInstance, root: string | undefined): void {
  let assets: Map<string, Asset> | undefined;
  const send = (url: string) => (request: FastifyRequest, reply: FastifyReply) => {
    assets ??= readAssets(root);
    const asset = assets.get(url);
    if (!asset) {
      return reply
        .code(404)
        .type('text/plain; charset=utf-8')
        .send(
          url === '/index.html' ? 'the dashboard is not built: run npm run build' : `no such file: ${url}`,
        );
    }
    reply
      .type(asset.type)
      .header('cache-control', asset.immutable ? 'public, max-age=31536000, immutable' : 'no-cache')
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer');
    if (asset.type.startsWith('text/html')) reply.header('content-security-policy', CSP);
    if (asset.gzip) {
      reply.header('vary', 'accept-encoding');
      if (negotiate(request.headers['accept-encoding'] ?? '', ['gzip']) === 'gzip') {
        return reply.header('content-encoding', 'gzip').send(asset.gzip);
      }
    }
    return reply.send(asset.body);
  };
  app.get('/', send('/index.html'));
  app.get('/index.html', send('/index.html'));
  app.get<{ Params: { file: string } }>('/assets/:file', (request, reply) =>
    send(`/assets/${request.params.file}`)(request, reply),
  );
}
