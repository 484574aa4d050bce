/**
 * Worker-thread entry (piscina): reads an upload's reports off the server's request thread.
 * The default export is what the pool runs for each task; its answer is packed (packOutcome) so
 * the request thread unpacks it a piece at a time.
 *
 * The thread runs at a lower CPU priority than the request thread (nice +10; on Linux a nice
 * value belongs to a thread): on two cores, reading a 200,000-test report otherwise took its
 * share of the core the request thread needed, and `/v1/status` waited behind it.
 */
import { getPriority, setPriority } from 'node:os';
import { packOutcome, readReports, type IngestTask, type PackedOutcome } from './ingest.js';

/** How much lower than the process the worker threads run (0 = same; 19 = lowest). */
const NICENESS = 10;

try {
  setPriority(Math.min(19, getPriority() + NICENESS));
} catch {
  // Not allowed here (some containers): the reports are read at the normal priority.
}

/** The reports read, packed for the trip back (packOutcome). */
export default function readPacked(task: IngestTask): PackedOutcome {
  return packOutcome(readReports(task));
}
