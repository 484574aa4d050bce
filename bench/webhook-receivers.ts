/**
 * The webhooks bench's two receivers (test/support/webhook-receiver.ts), in a process of their
 * own (forked by bench/webhooks.ts): the bench's client measures the queue's request
 * latency, and serving ~270 deliveries/s (and keeping every request) on the client's own event
 * loop counted their time as the server's. Reports what was delivered every 100 ms, compactly.
 */
import { startReceiver, type Mode } from '../test/support/webhook-receiver.js';

/** One delivery as the bench reads it: which receiver, the event's type, PR and timestamp, and when it arrived. */
export interface Delivered {
  receiver: number;
  type: string;
  pr: number;
  timestamp: string;
  at: number;
}
export type ToReceivers = { mode: Mode } | 'close';
export type FromReceivers = { urls: string[] } | { delivered: Delivered[] } | 'closed';

const port = { postMessage: (m: FromReceivers) => process.send!(m), on: (e: 'message', f: (m: ToReceivers) => void) => process.on(e, f), close: () => process.disconnect() };
const receivers = [await startReceiver(), await startReceiver()];
const reported = receivers.map(() => 0);
const report = () => {
  const delivered: Delivered[] = [];
  receivers.forEach((r, i) => {
    for (const d of r.delivered.slice(reported[i]))
      delivered.push({ receiver: i, type: String(d.json.type), pr: Number(d.json.pr_number), timestamp: String(d.json.timestamp), at: d.at });
    reported[i] = r.delivered.length;
    // Only the deliveries are needed: every request kept (headers, body) grew without end in a long outage.
    r.all.length = 0;
  });
  if (delivered.length) port.postMessage({ delivered } satisfies FromReceivers);
};
const timer = setInterval(report, 100);
port.on('message', async (m: ToReceivers) => {
  if (m === 'close') {
    clearInterval(timer);
    report();
    for (const r of receivers) await r.close();
    port.postMessage('closed' satisfies FromReceivers);
    port.close();
    return;
  }
  for (const r of receivers) r.mode = m.mode;
});
// The bench went away (it failed, or was stopped): nothing is left listening.
process.on('disconnect', () => process.exit(0));
port.postMessage({ urls: receivers.map((r) => r.url) } satisfies FromReceivers);
