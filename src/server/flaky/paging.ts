/** Keyset paging of the flaky-test lists: page tokens that stay right while uploads add tests. */
import type { Page, PageQuery } from '../../contract/index.js';
import type { CaseRow, CaseSet, FlakyStore } from '../../store/flaky.js';
import { badRequest } from '../errors.js';

/** Where a page token leads: keyset paging over tests in arrival order, stable while uploads add tests (no offsets). */
export interface Cursor {
  /** The page index the token leads to. */
  i: number;
  /** After this test seq (forwards) … */
  a?: number;
  /** … or before this test seq (backwards) … */
  b?: number;
  /** … or the last page. */
  l?: 1;
}

/** The opaque page token of a cursor. */
export function encodeCursor(cursor: Cursor): string {
  return Buffer.from(JSON.stringify(cursor), 'utf8').toString('base64url');
}

/** The cursor of a page token this server gave out (the first page without one). */
export function decodeCursor(token: string | undefined): Cursor {
  if (!token) return { i: 0 };
  try {
    const c = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as Cursor;
    const valid =
      Number.isInteger(c.i) &&
      c.i >= 0 &&
      (c.a === undefined || Number.isSafeInteger(c.a)) &&
      (c.b === undefined || Number.isSafeInteger(c.b)) &&
      (c.l === undefined || c.l === 1);
    if (valid) return c;
  } catch {
    // fall through
  }
  throw badRequest('page_query.page_token: not a token this server gave out');
}

export function emptyPage(): Page {
  return {
    total_rows: 0,
    total_pages: 0,
    next_page_token: '',
    prev_page_token: '',
    last_page_token: '',
    page_index: 0,
  };
}

/** One page of a set of tests, with the tokens of the pages around it. */
export async function pageOfCases(
  store: FlakyStore,
  set: CaseSet,
  query: PageQuery,
): Promise<{ rows: CaseRow[]; page: Page }> {
  const size = query.page_size;
  const cursor = decodeCursor(query.page_token);
  const total = await store.cases.countCases(set);
  const pages = Math.ceil(total / size);
  let rows: CaseRow[];
  let index = cursor.i;
  let more: boolean;
  if (cursor.l) {
    index = Math.max(pages - 1, 0);
    rows = await store.cases.casesInOrder(set, { last: true }, Math.max(total - index * size, 0));
    more = false;
  } else if (cursor.b !== undefined) {
    rows = await store.cases.casesInOrder(set, { before: cursor.b }, size);
    more = true;
  } else {
    rows = await store.cases.casesInOrder(set, { after: cursor.a }, size + 1);
    more = rows.length > size;
    rows = rows.slice(0, size);
  }
  const first = rows[0]?.seq;
  const last = rows[rows.length - 1]?.seq;
  return {
    rows,
    page: {
      total_rows: total,
      total_pages: pages,
      next_page_token: more && last !== undefined ? encodeCursor({ i: index + 1, a: last }) : '',
      prev_page_token: index > 0 && first !== undefined ? encodeCursor({ i: index - 1, b: first }) : '',
      last_page_token: pages > 0 ? encodeCursor({ i: pages - 1, l: 1 }) : '',
      page_index: index,
    },
  };
}
