/** Token authentication of API requests: hashes looked up, re-read when another process changes them, last use recorded. */
import { hash, timingSafeEqual } from 'node:crypto';
import type { Permission } from '../../contract/permissions.js';
import { TOKEN_ID_LENGTH, type StoredToken, type Store } from '../../store/index.js';

/** Who a token is: its organisation and what it may change. */
export interface TokenIdentity {
  org: string;
  permissions: ReadonlySet<Permission>;
  /** Who the token speaks for: its label, or `token <id>` (the id `railyard token list` shows) without one. */
  actor: string;
}

/** How often last-used times are written per token (ms): `token list` shows them to the minute. */
const TOUCH_EVERY_MS = 60_000;
/** Without a change counter (PostgreSQL), tokens are re-read this often (ms). */
const RELOAD_EVERY_MS = 1_000;

/** Valid tokens remembered as presented (see TokenAuth.recent). */
const RECENT_MAX = 1024;

interface KnownToken {
  digest: Buffer;
  hex: string;
  identity: TokenIdentity;
}

/**
 * API tokens, held as SHA-256 digests. A presented token is hashed and compared against every
 * stored digest with timingSafeEqual (no early exit), so timing reveals nothing useful; a valid
 * one is then remembered as presented, in memory, until the tokens are next read (`recent`).
 *
 * Tokens created or revoked by another process (`railyard token create|revoke` on the same data
 * dir) count from the next request: `fresh()` compares SQLite's data_version, which changes when
 * another connection commits, and re-reads the tokens before the request is checked.
 */
export class TokenAuth {
  private tokens: KnownToken[] = [];
  /**
   * The valid tokens presented since the tokens were last read, as presented (the most recently
   * used last, at most RECENT_MAX): a client sends the same token request after request, and its
   * hash and the comparisons with every stored digest cost more than the rest of a cached read.
   * Emptied whenever the tokens are re-read (a token created, revoked or changed anywhere), so it
   * never answers for a token the stored ones would not. Only valid tokens are kept, so its
   * timing tells whether a token is valid, which the answer tells anyway; a Map compares keys
   * only after their hashes match, so a guess learns nothing of a valid token's characters.
   */
  private readonly recent = new Map<string, KnownToken>();
  private version: number | undefined;
  private loadedAt = 0;
  private reloading: Promise<void> | undefined;
  /** The check the requests read in this turn of the event loop wait for (see fresh). */
  private checking: Promise<void> | undefined;
  /** When each token's last use was last written (by hash). */
  private readonly touched = new Map<string, number>();

  constructor(
    private readonly store: Store,
    private readonly now: () => number = Date.now,
    private readonly onError: (error: unknown) => void = () => undefined,
  ) {}

  /** Re-reads the stored token hashes (after tokens were added or revoked). */
  reload(): Promise<void> {
    if (this.store.accounts.listTokensNow) {
      try {
        const version = this.store.dataVersion?.();
        this.use(this.store.accounts.listTokensNow(), version);
        return Promise.resolve();
      } catch (error) {
        return Promise.reject(error as Error);
      }
    }
    this.reloading ??= (async () => {
      try {
        const version = this.store.dataVersion?.();
        this.use(await this.store.accounts.listTokens(), version);
      } finally {
        this.reloading = undefined;
      }
    })();
    return this.reloading;
  }

  private use(rows: StoredToken[], version: number | undefined): void {
    this.recent.clear();
    this.tokens = rows.map((r) => ({
      digest: Buffer.from(r.hash, 'hex'),
      hex: r.hash,
      identity: {
        org: r.org,
        permissions: new Set(r.permissions),
        actor: r.label?.trim() || `token ${r.hash.slice(0, TOKEN_ID_LENGTH)}`,
      },
    }));
    this.version = version;
    this.loadedAt = this.now();
  }

  /**
   * Resolves once the stored tokens were checked for changes (and re-read if they changed) AFTER
   * this call: a request that calls it once it has been read sees every token created or revoked
   * before it arrived. The requests read in one turn of the event loop share one check, made when
   * they have all been read (setImmediate: after the turn's reads): checking costs a system call
   * at least (SQLite: a read of the wal-index header, PRAGMA data_version when it moved, see
   * store/wal-index.ts), as much as the rest of a cached answer, and a busy server reads many
   * requests a turn. Rejects if the re-read fails.
   */
  fresh(): Promise<void> {
    this.checking ??= new Promise<void>((resolve, reject) => {
      setImmediate(() => {
        // Cleared first: a call from here on waits for a check that begins after it.
        this.checking = undefined;
        try {
          if (this.stale()) this.reload().then(resolve, reject);
          else resolve();
        } catch (error) {
          reject(error as Error);
        }
      });
    });
    return this.checking;
  }

  /** Whether the stored tokens may have changed since they were read. */
  stale(): boolean {
    if (this.store.dataVersion) return this.store.dataVersion() !== this.version;
    return this.now() - this.loadedAt >= RELOAD_EVERY_MS;
  }

  /** Adds a token (stored as a hash) and makes it valid at once (default: every permission). */
  async add(org: string, token: string, permissions?: readonly Permission[]): Promise<void> {
    await this.store.accounts.addToken(org, token, undefined, permissions);
    await this.reload();
  }

  get size(): number {
    return this.tokens.length;
  }

  /** The organisation the token belongs to, or null. Notes the use for `railyard token list`. */
  organisationOf(token: string | undefined): string | null {
    return this.identify(token)?.org ?? null;
  }

  /** The token's organisation and permissions, or null for an unknown token. Notes the use for `railyard token list`. */
  identify(token: string | undefined): TokenIdentity | null {
    if (!token) return null;
    let found = this.recent.get(token);
    if (found) {
      this.recent.delete(token);
    } else {
      // One-shot hash: a third of the cost of createHash().update().digest().
      const digest = hash('sha256', token, 'buffer');
      for (const t of this.tokens) {
        if (timingSafeEqual(digest, t.digest) && found === undefined) found = t;
      }
      if (!found) return null;
      if (this.recent.size >= RECENT_MAX) this.recent.delete(this.recent.keys().next().value!);
    }
    this.recent.set(token, found);
    this.noteUse(found.hex);
    return found.identity;
  }

  /** Writes the last-used time at most once a minute per token, off the request's path. */
  private noteUse(hex: string): void {
    const now = this.now();
    const last = this.touched.get(hex);
    if (last !== undefined && now - last < TOUCH_EVERY_MS) return;
    this.touched.set(hex, now);
    this.store.accounts.touchToken(hex, now).catch(this.onError);
  }
}
