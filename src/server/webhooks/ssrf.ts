/**
 * Where outgoing webhooks may go, and the one HTTP client that takes them there. An API token
 * must not turn the server into a probe of its own network: only `https://` (plain `http://` with
 * `--webhook-allow-http`), and no loopback, private, link-local or other special address unless
 * `--webhook-allow-private` — checked when a connection is made, after DNS resolution (a name may
 * resolve elsewhere at delivery time than when the endpoint was created). Redirects are never
 * followed; every attempt has a deadline, and at most MAX_RESPONSE_BYTES of an answer are read.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { BlockList, isIP, type LookupFunction } from 'node:net';

export interface AddressPolicy {
  /** `--webhook-allow-private`: loopback, private and link-local addresses are allowed. */
  allowPrivate: boolean;
  /** `--webhook-allow-http`: plain `http://` URLs are allowed. */
  allowHttp: boolean;
}

/** An endpoint URL refused by the policy (the message names the rule). */
export class AddressRefused extends Error {
  readonly code = 'WEBHOOK_ADDRESS_REFUSED';
}

// One list per family: Node's BlockList matches an IPv4 address against an IPv6 subnet through
// its IPv4-mapped form, so a single list holding `::ffff:0:0/96` refused every IPv4 address.
const blocked4 = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local (cloud metadata at 169.254.169.254)
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const)
  blocked4.addSubnet(net, bits, 'ipv4');
const blocked6 = new BlockList();
for (const [net, bits] of [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b::', 96], // NAT64
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
] as const)
  blocked6.addSubnet(net, bits, 'ipv6');
/** IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`, also written `::ffff:a00:1`): judged as the IPv4 address. */
const mapped = new BlockList();
mapped.addSubnet('::ffff:0:0', 96, 'ipv6');

/**
 * Whether an address is loopback, private, link-local or otherwise special (the lists above and
 * nothing else): every other IPv4 or IPv6 address is public.
 */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return blocked4.check(address, 'ipv4');
  if (family !== 6) return true;
  // blocked4 matches a mapped address against its IPv4 subnets.
  if (mapped.check(address, 'ipv6')) return blocked4.check(address, 'ipv6');
  return blocked6.check(address, 'ipv6');
}

const bare = (hostname: string) => hostname.replace(/^\[(.*)\]$/, '$1');

/**
 * The URL of a new endpoint, or AddressRefused naming what is wrong. A literal address is checked
 * here; a name is checked at each connection (guardedLookup).
 */
export function checkEndpointUrl(text: string, policy: AddressPolicy): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new AddressRefused(`url: "${text.slice(0, 200)}" is not a URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new AddressRefused(`url: must be https:// (got ${url.protocol}//)`);
  if (url.protocol === 'http:' && !policy.allowHttp)
    throw new AddressRefused('url: must be https:// (plain http:// needs the server flag --webhook-allow-http)');
  if (url.username || url.password) throw new AddressRefused('url: must not carry a user name or password');
  const host = bare(url.hostname);
  if (isIP(host) && !policy.allowPrivate && isPrivateAddress(host))
    throw new AddressRefused(`url: ${host} is a loopback, private or link-local address (allowed only with the server flag --webhook-allow-private)`);
  return url;
}

/** dns.lookup that refuses names resolving to a private address (unless allowed). */
function guardedLookup(policy: AddressPolicy): LookupFunction {
  return (hostname, options, callback) => {
    // Special-use names (RFC 6761): `.invalid` never resolves, so it is not even asked about; the
    // `localhost` names are loopback whatever a resolver says.
    const name = hostname.toLowerCase().replace(/\.$/, '');
    if (name === 'invalid' || name.endsWith('.invalid'))
      return callback(Object.assign(new Error(`${hostname}: a .invalid name never resolves`), { code: 'ENOTFOUND' }), '', 0);
    if (!policy.allowPrivate && (name === 'localhost' || name.endsWith('.localhost')))
      return callback(new AddressRefused(`${hostname} is a loopback name`) as NodeJS.ErrnoException, '', 0);
    dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error, '', 0);
      const refused = policy.allowPrivate ? undefined : addresses.find((a) => isPrivateAddress(a.address));
      if (refused) {
        const e = new AddressRefused(`${hostname} resolves to ${refused.address}, a loopback, private or link-local address`);
        return callback(e as NodeJS.ErrnoException, '', 0);
      }
      if (!addresses.length) return callback(Object.assign(new Error(`${hostname}: no address`), { code: 'ENOTFOUND' }), '', 0);
      if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      callback(null, addresses[0].address, addresses[0].family);
    });
  };
}

/** How much of an answer is read; the rest is dropped with the connection. */
export const MAX_RESPONSE_BYTES = 64 * 1024;
/** How much of it is kept in the delivery log. */
export const RESPONSE_EXCERPT_BYTES = 1024;

export interface PostResult {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The start of the body (at most RESPONSE_EXCERPT_BYTES, as text). */
  excerpt: string;
  /** The body as read (at most MAX_RESPONSE_BYTES). */
  body: Buffer;
}

/** The HTTP client of outgoing webhooks for one address policy (keep-alive agents with the guarded lookup). */
export class WebhookTransport {
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;

  constructor(
    readonly policy: AddressPolicy,
    readonly timeoutMs = 10_000,
  ) {
    const lookup = guardedLookup(policy);
    this.httpAgent = new http.Agent({ keepAlive: true, maxSockets: 32, lookup });
    this.httpsAgent = new https.Agent({ keepAlive: true, maxSockets: 32, lookup });
  }

  /** POSTs `body`; rejects on refusal, network error or timeout (never follows a redirect). */
  post(target: string | URL, body: string, headers: Record<string, string>, signal?: AbortSignal): Promise<PostResult> {
    return this.request('POST', target, body, headers, signal);
  }

  /** One request (`body` undefined: none), under the same rules as `post`. */
  request(
    method: string,
    target: string | URL,
    body: string | undefined,
    headers: Record<string, string>,
    signal?: AbortSignal,
  ): Promise<PostResult> {
    let url: URL;
    try {
      url = checkEndpointUrl(String(target), this.policy);
    } catch (error) {
      return Promise.reject(error);
    }
    const client = url.protocol === 'https:' ? https : http;
    return new Promise((resolve, reject) => {
      const req = client.request(
        url,
        {
          method,
          agent: url.protocol === 'https:' ? this.httpsAgent : this.httpAgent,
          headers: {
            ...(body === undefined
              ? {}
              : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) }),
            'user-agent': 'Railyard-Webhooks/1',
            ...headers,
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          const done = () => {
            clearTimeout(timer);
            const all = Buffer.concat(chunks);
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              body: all,
              excerpt: all.subarray(0, RESPONSE_EXCERPT_BYTES).toString('utf8'),
            });
          };
          res.on('data', (chunk: Buffer) => {
            if (size >= MAX_RESPONSE_BYTES) return;
            chunks.push(chunk.subarray(0, MAX_RESPONSE_BYTES - size));
            size += chunk.length;
            if (size >= MAX_RESPONSE_BYTES) {
              res.destroy();
              done();
            }
          });
          res.on('end', done);
          res.on('error', (error) => {
            clearTimeout(timer);
            reject(error);
          });
        },
      );
      const timer = setTimeout(() => req.destroy(Object.assign(new Error(`no answer within ${this.timeoutMs} ms`), { code: 'ETIMEDOUT' })), this.timeoutMs);
      signal?.addEventListener('abort', () => req.destroy(new Error('aborted')), { once: true });
      req.on('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      req.end(body);
    });
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}
