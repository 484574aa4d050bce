/**
 * Where `railyard serve` writes its log lines without blocking the event loop: pino's
 * asynchronous destination (SonicBoom: each line written as soon as the descriptor takes it)
 * instead of synchronous writes to stdout, which cost a third of the throughput of a busy server
 * at the default `info` level (bench/README.md). What is buffered is flushed synchronously when
 * the process exits, also after a crash (an uncaught exception still runs `exit` listeners).
 */
import { destination } from 'pino';

export interface LogDestination {
  stream: NodeJS.WritableStream;
  /** Writes out what is buffered, synchronously. */
  flush(): void;
  /**
   * Resolves once no write is in flight (at most `ms`): a synchronous flush at exit while an
   * asynchronous write is still partly done could put the last lines before earlier ones.
   */
  settle(ms?: number): Promise<void>;
}

/** An asynchronous destination on a file descriptor (1 = stdout), flushed on exit. */
export function asyncLogDestination(fd = 1): LogDestination {
  // minLength 0: each line is written as soon as the descriptor takes it, never held back until
  // 4 KiB more arrive (an operator tailing a quiet server's log sees an error when it happens).
  const dest = destination({ dest: fd, sync: false, minLength: 0 });
  const flush = () => {
    try {
      dest.flushSync();
    } catch {
      // Nothing buffered, or the descriptor is gone (a closed pipe): nothing more to do.
    }
  };
  process.on('exit', flush);
  // SonicBoom's flush(cb) answers at once with minLength 0: its in-flight flag is what tells.
  const writing = () => (dest as unknown as { _writing?: boolean })._writing === true;
  const settle = async (ms = 1000) => {
    for (const end = Date.now() + ms; writing() && Date.now() < end; )
      await new Promise((resolve) => setTimeout(resolve, 5));
  };
  return { stream: dest as unknown as NodeJS.WritableStream, flush, settle };
}
