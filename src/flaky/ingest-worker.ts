/**
 * Worker-thread entry (piscina): reads an upload's reports off the server's request thread.
 * The default export is what the pool runs for each task.
 */
import { readReports } from './ingest.js';

export default readReports;
