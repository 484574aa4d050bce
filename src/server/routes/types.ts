/** What a route handler is: its validated input, its context, and raw answers. */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { OperationName, Routes } from '../../contract/index.js';

/** What a handler sees besides its validated input. */
export interface RequestContext {
  /** The organisation of the token (null only on routes without auth). */
  org: string;
  /** Who the token speaks for: its label, or `token <id>` without one ('' on routes without auth). */
  actor: string;
  request: FastifyRequest;
  reply: FastifyReply;
}

/** A body that is not JSON (Prometheus text) or is already serialized JSON. */
export class RawAnswer {
  constructor(
    readonly body: string | Buffer,
    readonly contentType: string,
    /** The same Buffer is answered until the answer changes, so its gzip can be kept with it. */
    readonly reusable = false,
  ) {}
}

export type InputOf<Op extends OperationName> = Routes[Op]['request'] extends z.ZodType
  ? z.output<Routes[Op]['request']>
  : undefined;

export type Handler<Op extends OperationName> = (
  input: InputOf<Op>,
  ctx: RequestContext,
) => unknown | Promise<unknown>;

export type Handlers = { [Op in OperationName]: Handler<Op> };

/** The operations of one tag of the route table (merge-queue, flaky-tests, service). */
export type OpsOfTag<T extends string> = {
  [Op in OperationName]: Routes[Op]['tag'] extends T ? Op : never;
}[OperationName];
