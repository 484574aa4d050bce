/**
 * A Slack incoming webhook on 127.0.0.1 for the `slack` endpoint kind's tests: it answers as Slack
 * does (`200 ok`; `404 no_service` for an unknown hook path; `400 invalid_payload` for a body
 * that is not a JSON object; `400 no_text` without `text` or `blocks`) and records every request.
 * Stricter than Slack on one point, on purpose: a top-level field Slack does not document, or a
 * signing header of Standard Webhooks / Svix, is refused (400 `invalid_payload`), so a message
 * carrying the generic endpoints' noise fails the test instead of passing unseen.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/** The top-level fields of an incoming-webhook message Slack documents. */
const SLACK_FIELDS = new Set(['text', 'blocks', 'attachments', 'thread_ts', 'mrkdwn', 'unfurl_links', 'unfurl_media', 'username', 'icon_emoji', 'icon_url', 'channel']);
const SIGNING_HEADERS = /^(webhook|svix)-/;

export interface SlackRequest {
  headers: IncomingHttpHeaders;
  body: string;
  status: number;
  answer: string;
}

export interface SlackReceiver {
  /** The hook URL to give Railyard (`/services/T…/B…/…`). */
  url: string;
  /** A URL on the same server Slack does not know (answers 404 no_service). */
  removedUrl: string;
  /** Every request with what it was answered. */
  requests: SlackRequest[];
  /** The `text` of every accepted message, in arrival order. */
  messages: string[];
  close(): Promise<void>;
}

export async function startSlackReceiver(): Promise<SlackReceiver> {
  const hookPath = '/services/T0RAILYARD/B0QUEUE/abcdefghijklmnopqrstuvwx';
  const receiver: SlackReceiver = {
    url: '',
    removedUrl: '',
    requests: [],
    messages: [],
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((done) => server.close(() => done()));
    },
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const answer = (status: number, text: string) => {
        receiver.requests.push({ headers: req.headers, body, status, answer: text });
        res.writeHead(status, { 'content-type': 'text/html' }).end(text);
      };
      if (req.method !== 'POST' || req.url !== hookPath) return answer(404, 'no_service');
      if (!String(req.headers['content-type'] ?? '').startsWith('application/json')) return answer(400, 'invalid_payload');
      if (Object.keys(req.headers).some((h) => SIGNING_HEADERS.test(h))) return answer(400, 'invalid_payload');
      let message: unknown;
      try {
        message = JSON.parse(body);
      } catch {
        return answer(400, 'invalid_payload');
      }
      if (typeof message !== 'object' || message === null || Array.isArray(message)) return answer(400, 'invalid_payload');
      const fields = message as Record<string, unknown>;
      if (Object.keys(fields).some((k) => !SLACK_FIELDS.has(k))) return answer(400, 'invalid_payload');
      if (typeof fields.text !== 'string' && !Array.isArray(fields.blocks)) return answer(400, 'no_text');
      receiver.messages.push(String(fields.text ?? ''));
      answer(200, 'ok');
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', () => done()));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  receiver.url = `${base}${hookPath}`;
  receiver.removedUrl = `${base}/services/T0RAILYARD/B0GONE/zyxwvutsrqponmlkjihgfedc`;
  return receiver;
}
