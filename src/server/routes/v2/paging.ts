/**
 * v2 list pages: `limit` items after an opaque cursor, the envelope `data`/`nextCursor`/`hasMore`
 * (`total` with includeTotal). A cursor names the operation and filters it was made for and the
 * key of the last item given; a page after a change goes on after that item, wherever it is now.
 */
import { createHash } from 'node:crypto';
import { invalidCursor } from './errors.js';

export const DEFAULT_LIMIT = 25;

export interface ListInput {
  limit?: number;
  cursor?: string;
  includeTotal?: boolean;
}

export interface Page<T> {
  data: T[];
  nextCursor: string | null;
  hasMore: boolean;
  total?: number;
}

/** What a cursor is bound to: the operation, its path id and its filters (not the paging fields). */
function bindingOf(scope: string, filters: Record<string, unknown>): string {
  const { limit: _l, cursor: _c, includeTotal: _t, ...rest } = filters;
  const sorted = Object.keys(rest)
    .sort()
    .map((k) => [k, rest[k]]);
  return createHash('sha256')
    .update(`${scope}\0${JSON.stringify(sorted)}`)
    .digest('base64url')
    .slice(0, 16);
}

/**
 * One page of `items` (already filtered and in the operation's order), each known by `keyOf`.
 * `scope` names the operation and its path id; `input` is the validated query.
 */
export function pageOf<I, T>(
  items: readonly I[],
  keyOf: (item: I) => string,
  present: (item: I) => T,
  scope: string,
  input: ListInput & Record<string, unknown>,
): Page<T> {
  const limit = input.limit ?? DEFAULT_LIMIT;
  const binding = bindingOf(scope, input);
  let start = 0;
  if (input.cursor !== undefined) {
    let decoded: { b?: unknown; k?: unknown };
    try {
      decoded = JSON.parse(Buffer.from(input.cursor, 'base64url').toString('utf8')) as {
        b?: unknown;
        k?: unknown;
      };
    } catch {
      throw invalidCursor();
    }
    if (decoded?.b !== binding || typeof decoded.k !== 'string') throw invalidCursor();
    const at = items.findIndex((i) => keyOf(i) === decoded.k);
    // The last item of the previous page has gone (a list whose members leave): nothing after it is known.
    if (at < 0) throw invalidCursor();
    start = at + 1;
  }
  const slice = items.slice(start, start + limit);
  const hasMore = start + limit < items.length;
  const last = slice[slice.length - 1];
  const page: Page<T> = {
    data: slice.map(present),
    nextCursor:
      hasMore && last !== undefined
        ? Buffer.from(JSON.stringify({ b: binding, k: keyOf(last) })).toString('base64url')
        : null,
    hasMore,
  };
  if (input.includeTotal) page.total = items.length;
  return page;
}
