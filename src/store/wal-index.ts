/**
 * PRAGMA data_version for the price of one small read: whether another connection (another
 * process, `railyard token revoke`) committed to an SQLite database in WAL mode, asked on every
 * authenticated request. The PRAGMA begins a read transaction (file locks: system calls), ~2 µs
 * idle and 5–9 µs under load, more than the rest of a cached API answer.
 *
 * The wal-index header (the first 96 bytes of the `-shm` file: two copies of a 48-byte header,
 * https://www.sqlite.org/walformat.html) changes with every commit of any connection: its frame
 * count and checksums, or its salts when the WAL starts over. It is what SQLite compares when a
 * read transaction begins, and data_version changes only when SQLite saw it change. So while the
 * header reads the same bytes as when the version was last asked, the version is the same; when it
 * differs (a commit, also this connection's own, or a read that caught a writer halfway), the
 * PRAGMA is asked again. The header is read before the PRAGMA, so a commit between the two shows
 * as a change the next time.
 */
import { closeSync, openSync, readSync } from 'node:fs';

const HEADER_BYTES = 96;
/** The header's first field, in the machine's byte order: the wal-index format's version. */
const WAL_INDEX_VERSION = 3007000;

/**
 * `exact` (PRAGMA data_version on the connection) asked only when the wal-index header of
 * `shmPath` changed since its last answer. Without a `-shm` file (not in WAL mode) every call asks
 * `exact`. `close` releases the file.
 */
export function walIndexedVersion(
  shmPath: string,
  exact: () => number,
): { version: () => number; close: () => void } {
  let fd: number | undefined;
  /** Whether opening was tried: after the first PRAGMA, whose read transaction creates the file in WAL mode. */
  let tried = false;
  const seen = Buffer.alloc(HEADER_BYTES);
  const now = Buffer.alloc(HEADER_BYTES);
  /** Whether `seen` is a whole header read before `last` was asked. */
  let valid = false;
  let last = 0;
  /** Reads the header; false unless it is a whole, initialised wal-index header. */
  const read = (): boolean => {
    try {
      if (readSync(fd!, now, 0, HEADER_BYTES, 0) !== HEADER_BYTES) return false;
    } catch {
      return false;
    }
    const format = now.readUInt32LE(0) === WAL_INDEX_VERSION || now.readUInt32BE(0) === WAL_INDEX_VERSION;
    return format && now[12] === 1; // isInit
  };
  return {
    version: () => {
      if (fd === undefined) {
        if (tried) return exact();
        tried = true;
        last = exact();
        try {
          fd = openSync(shmPath, 'r');
        } catch {
          return last;
        }
      }
      const whole = read();
      if (valid && whole && now.equals(seen)) return last;
      now.copy(seen);
      valid = whole;
      last = exact();
      return last;
    },
    close: () => {
      if (fd !== undefined) closeSync(fd);
      fd = undefined;
      tried = true;
    },
  };
}
