// Landing faults of the GitLab emulator (failLanding): the next pushes that update a project's
// branch fail the way a blip of GitLab or the network would — answered 502/503 or the connection
// dropped — either before anything happens or after the push was carried out (the branch moved,
// its hooks and pipelines started) with only the answer lost. A push is recognised by the ref
// updates at the start of its receive-pack request (pkt-lines `old new ref`), read before git is run.
import { Readable } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import type { IncomingMessage, ServerResponse } from 'node:http';

/** How the emulator fails a landing push (failLanding). */
export interface LandingFault {
  /** The branch whose update fails (default: the project's default branch). */
  branch?: string;
  times?: number;
  answer?: 502 | 503 | 'drop';
  /** Carry the push out first, then fail its answer. */
  after?: boolean;
}

interface Armed {
  ref: string;
  answer: 502 | 503 | 'drop';
  after: boolean;
}

/** Serves a push through git http-backend: `res` gets its answer. */
export type ServePush = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

export class LandingFaults {
  private readonly armed = new Map<string, Armed[]>();
  /** Pushes that met a fault, oldest first: the project, the ref, how it failed. */
  readonly met: Array<{ path: string; ref: string; answer: 502 | 503 | 'drop'; after: boolean }> = [];

  arm(path: string, defaultBranch: string, fault: LandingFault): void {
    const list = this.armed.get(path) ?? [];
    const ref = `refs/heads/${fault.branch ?? defaultBranch}`;
    for (let i = 0; i < (fault.times ?? 1); i++)
      list.push({ ref, answer: fault.answer ?? 502, after: fault.after ?? false });
    this.armed.set(path, list);
  }

  /** Whether a push to `path` may meet a fault (then `serve` must read it first). */
  pending(path: string): boolean {
    return (this.armed.get(path)?.length ?? 0) > 0;
  }

  /** Reads the push, fails it if it updates an armed ref, else hands it to git unchanged. */
  async serve(path: string, req: IncomingMessage, res: ServerResponse, push: ServePush): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const replay = Object.assign(Readable.from([body]), {
      headers: req.headers,
      method: req.method,
      url: req.url,
      socket: req.socket,
    }) as unknown as IncomingMessage;
    const refs = refsOf(req.headers['content-encoding'] === 'gzip' ? gunzipSync(body) : body);
    const list = this.armed.get(path) ?? [];
    const i = list.findIndex((f) => refs.includes(f.ref));
    if (i < 0) return push(replay, res);
    const [fault] = list.splice(i, 1);
    this.met.push({ path, ref: fault!.ref, answer: fault!.answer, after: fault!.after });
    if (fault!.after) await push(replay, sink());
    if (fault!.answer === 'drop') {
      req.socket.destroy();
      return;
    }
    res.writeHead(fault!.answer, { 'content-type': 'text/html' });
    res.end(`<html><body><h1>${fault!.answer}</h1></body></html>\n`);
  }
}

/** The refs a receive-pack request updates: its pkt-lines up to the first flush. */
function refsOf(body: Buffer): string[] {
  const refs: string[] = [];
  let at = 0;
  while (at + 4 <= body.length) {
    const len = Number.parseInt(body.subarray(at, at + 4).toString('latin1'), 16);
    if (!Number.isFinite(len) || len === 0) break;
    const line = body
      .subarray(at + 4, at + len)
      .toString('latin1')
      .split('\0')[0]!
      .trim();
    const ref = line.split(' ')[2];
    if (ref) refs.push(ref);
    at += len;
  }
  return refs;
}

/** A response that keeps nothing: git's answer to a push whose answer is lost. */
function sink(): ServerResponse {
  const r = {
    statusCode: 200,
    headersSent: false,
    setHeader: () => r,
    writeHead: () => r,
    write: () => true,
    end: () => r,
  };
  return r as unknown as ServerResponse;
}
