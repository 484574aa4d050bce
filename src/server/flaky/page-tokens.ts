/** Page tokens of the flaky-test lists: encrypted and authenticated, bounded, refused when tampered with. */
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import type { Page } from '../../contract/index.js';
import type { Store } from '../../store/index.js';
import { badRequest } from '../errors.js';

const IV_BYTES = 12;
const TAG_BYTES = 16;
/** Longer tokens were never given out: refused before any decoding. */
const MAX_TOKEN_CHARS = 512;
const SECRET_NAME = 'page-token-key';

/**
 * Page tokens as clients see them: the service's keyset cursor sealed with AES-256-GCM under a key
 * the server generates once and keeps in the store, bound to the organisation (associated data).
 * A token reveals nothing (no counter, no position); another organisation's token, or an edited
 * one, fails authentication and is refused with 400. The IV is derived from the organisation and
 * the cursor (an HMAC), so the same page always gets the same token.
 */
export class PageTokens {
  private readonly encKey: Buffer;
  private readonly ivKey: Buffer;

  constructor(secret: Buffer) {
    this.encKey = createHmac('sha256', secret).update('railyard page tokens: encryption').digest();
    this.ivKey = createHmac('sha256', secret).update('railyard page tokens: iv').digest();
  }

  static async load(store: Store): Promise<PageTokens> {
    const secret = await store.accounts.serverSecret(SECRET_NAME, () => randomBytes(32).toString('base64'));
    return new PageTokens(Buffer.from(secret, 'base64'));
  }

  /** The token `org` gets for the service's cursor (`''` stays `''`: no page). */
  seal(org: string, cursor: string): string {
    if (cursor === '') return '';
    const iv = createHmac('sha256', this.ivKey)
      .update(org)
      .update('\0')
      .update(cursor)
      .digest()
      .subarray(0, IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.encKey, iv);
    cipher.setAAD(Buffer.from(org, 'utf8'));
    const body = Buffer.concat([cipher.update(cursor, 'utf8'), cipher.final()]);
    return Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64url');
  }

  /** The service's cursor inside a token `org` was given; 400 for anything else. */
  open(org: string, token: string | undefined): string | undefined {
    if (token === undefined || token === '') return token;
    const refuse = () =>
      badRequest('page_query.page_token: not a page token this server gave to this organisation');
    if (token.length > MAX_TOKEN_CHARS) throw refuse();
    const raw = Buffer.from(token, 'base64url');
    if (raw.length <= IV_BYTES + TAG_BYTES || raw.toString('base64url') !== token) throw refuse();
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.encKey, raw.subarray(0, IV_BYTES));
      decipher.setAAD(Buffer.from(org, 'utf8'));
      decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
      return Buffer.concat([
        decipher.update(raw.subarray(IV_BYTES, raw.length - TAG_BYTES)),
        decipher.final(),
      ]).toString('utf8');
    } catch {
      throw refuse();
    }
  }

  /** A page with each of its tokens sealed for `org`. */
  sealPage(org: string, page: Page): Page {
    return {
      ...page,
      next_page_token: this.seal(org, page.next_page_token),
      prev_page_token: this.seal(org, page.prev_page_token),
      last_page_token: this.seal(org, page.last_page_token),
    };
  }
}
