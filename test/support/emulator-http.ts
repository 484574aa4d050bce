/**
 * The HTTP server of a forge emulator (GitHub's, GitLab's): listening on 127.0.0.1 and a free
 * port, every request answered by the emulator's `handle`, a failure of it answered 500 in the
 * forge's JSON words; closed with every connection it holds.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

export interface EmulatorHttp {
  /** `127.0.0.1:PORT` */
  host: string;
  /** Closes every connection, then the server. */
  close(): Promise<void>;
}

export async function startEmulatorHttp(
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
  failure: { contentType: string; message: (error: unknown) => string },
): Promise<EmulatorHttp> {
  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) {
        res.statusCode = 500;
        res.setHeader('content-type', failure.contentType);
      }
      res.end(JSON.stringify({ message: failure.message(error) }));
    });
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    host: `127.0.0.1:${(server.address() as { port: number }).port}`,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
