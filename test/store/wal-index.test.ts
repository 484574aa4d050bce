// The server's data_version (how it learns that another process changed the tokens) through the
// wal-index header: it must move on every commit of another connection, also across the WAL
// starting over after a checkpoint, and it may skip the PRAGMA only while nothing was committed.
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { walIndexedVersion } from '../../src/store/wal-index.js';
import { cleanupsAfterEach } from '../support/hooks.js';
import { tempDirSync } from '../support/tmp.js';

const cleanup = cleanupsAfterEach();

/** Two connections to a fresh WAL database: the server's (with the version) and another's. */
function twoConnections(journal = 'WAL') {
  const path = join(tempDirSync(), 'db.sqlite');
  const server = new Database(path);
  server.pragma(`journal_mode = ${journal}`);
  server.exec('CREATE TABLE t (x INTEGER)');
  const other = new Database(path);
  other.pragma('busy_timeout = 5000');
  const pragma = server.prepare('PRAGMA data_version').pluck();
  let asked = 0;
  const versions = walIndexedVersion(`${path}-shm`, () => {
    asked++;
    return pragma.get() as number;
  });
  cleanup(() => {
    versions.close();
    other.close();
    server.close();
  });
  const insert = other.prepare('INSERT INTO t VALUES (?)');
  return { server, other, insert, versions, asked: () => asked };
}

describe('walIndexedVersion', () => {
  it('changes after every commit of another connection, and asks SQLite only when one happened', () => {
    const { insert, versions, asked } = twoConnections();
    let last = versions.version();
    for (let i = 0; i < 200; i++) {
      insert.run(i);
      const now = versions.version();
      expect(now, `commit ${i}`).not.toBe(last);
      last = now;
      // Nothing committed since: the same version, without the PRAGMA.
      const before = asked();
      for (let k = 0; k < 5; k++) expect(versions.version()).toBe(last);
      expect(asked()).toBe(before);
    }
  });

  it('sees commits after the WAL starts over (a TRUNCATE checkpoint) and after a RESTART one', () => {
    const { other, insert, versions } = twoConnections();
    let last = versions.version();
    for (const mode of ['TRUNCATE', 'RESTART', 'TRUNCATE', 'PASSIVE']) {
      insert.run(1);
      other.pragma(`wal_checkpoint(${mode})`);
      const afterCheckpoint = versions.version();
      expect(afterCheckpoint, mode).not.toBe(last);
      insert.run(2);
      last = versions.version();
      expect(last, `the first commit after ${mode}`).not.toBe(afterCheckpoint);
    }
  });

  it('without a wal-index (not in WAL mode) asks SQLite every time, and still sees commits', () => {
    const { insert, versions, asked } = twoConnections('DELETE');
    const first = versions.version();
    const before = asked();
    versions.version();
    versions.version();
    expect(asked()).toBe(before + 2);
    insert.run(1);
    expect(versions.version()).not.toBe(first);
  });
});
