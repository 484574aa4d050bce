/** What a v2 handler is: its validated query or body, the path id, the caller's organisation. */
import type { FastifyReply, FastifyRequest } from 'fastify';

export interface V2Request {
  org: string;
  /** The `:id` of the path ('' when it has none). */
  id: string;
  query: Record<string, unknown>;
  body: Record<string, unknown>;
  request: FastifyRequest;
  reply: FastifyReply;
}

/** The answer's JSON (undefined: no body, as for 202 and 204). */
export type V2Handler = (req: V2Request) => Promise<unknown>;

/** An answer that is not JSON (Prometheus text). */
export class V2Text {
  constructor(
    readonly body: string | Buffer,
    readonly contentType: string,
  ) {}
}
