/** What a v2 handler is: its validated query or body, the path id, the caller's organisation. */
import type { FastifyReply, FastifyRequest } from 'fastify';

export interface V2Request {
  org: string;
  /** The `:id` of the path ('' when it has none). */
  id: string;
  query: Record<string, unknown>;
  /** The query string as sent ('' without one): what `query` was validated from, a cache key for it. */
  rawQuery: string;
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

/** Answers kept per queue version (models are replaced, never changed), by request: at most `max` a version. */
export class PerModelCache {
  private readonly byModel = new WeakMap<object, Map<string, V2Text>>();

  constructor(private readonly max = 32) {}

  get(model: object, key: string, make: () => V2Text): V2Text {
    let answers = this.byModel.get(model);
    if (!answers) {
      answers = new Map();
      this.byModel.set(model, answers);
    }
    let answer = answers.get(key);
    if (!answer) {
      answer = make();
      if (answers.size >= this.max) answers.clear();
      answers.set(key, answer);
    }
    return answer;
  }
}

export const JSON_TYPE = 'application/json; charset=utf-8';

/** A JSON answer serialized once (kept in a PerModelCache). */
export const jsonText = (value: unknown) => new V2Text(Buffer.from(JSON.stringify(value)), JSON_TYPE);
