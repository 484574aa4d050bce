/**
 * The `slack` endpoint kind: the same events, as Slack incoming-webhook messages — one message per
 * pull-request outcome (merged, failed, canceled) and per test turning flaky or broken, the reason
 * as a sentence, links to the PR's dashboard page. Sent through Slack's `@slack/webhook` over the
 * guarded transport (same address rules, no redirects, deadline).
 */
import { IncomingWebhook, type FetchFunction, type IncomingWebhookSendArguments } from '@slack/webhook';
import { explainReason } from '../../contract/reasons.js';
import type { WebhookTransport } from './ssrf.js';

/** The events a Slack endpoint gets unless told otherwise. */
export const SLACK_DEFAULT_EVENTS = [
  'pull_request.merged',
  'pull_request.failed',
  'pull_request.canceled',
  'test_case.status_changed',
  'webhook.test',
];

type Payload = Record<string, unknown> & {
  repository?: { host?: string; owner?: string; name?: string };
  railyard?: { title?: string | null; detail?: string | null };
};

/** Escapes text for Slack's mrkdwn. */
const esc = (text: string) => text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');

function sentence(code: unknown): string {
  if (typeof code !== 'string') return '';
  const text = explainReason(code);
  return text.endsWith('.') ? text : `${text}.`;
}

/** The Slack message of one event, or null when Slack gets no message for it. */
export function slackMessage(type: string, payload: Payload): IncomingWebhookSendArguments | null {
  const repo = payload.repository ? `${payload.repository.owner}/${payload.repository.name}` : '';
  if (type.startsWith('pull_request.')) {
    const pr = `<${String(payload.http_details_url)}|${esc(repo)}#${String(payload.pr_number)}>`;
    const title = payload.railyard?.title ? ` ${esc(payload.railyard.title)}` : '';
    const by = payload.author ? ` by ${esc(String(payload.author))}` : '';
    const into = ` into \`${esc(String(payload.target_branch))}\``;
    let text: string;
    if (type === 'pull_request.merged') text = `:white_check_mark: ${pr}${title}${by} merged${into}.`;
    else if (type === 'pull_request.failed')
      text = `:x: ${pr}${title}${by} failed in the merge queue${into}. ${esc(sentence(payload.failure_reason))}${payload.railyard?.detail ? `\n> ${esc(payload.railyard.detail)}` : ''}`;
    else if (type === 'pull_request.canceled')
      text = `:no_entry_sign: ${pr}${title}${by} left the merge queue${into}. ${esc(sentence(payload.cancellation_reason))}`;
    else text = `${pr}${title}: ${esc(String(payload.action))}.`;
    return { text };
  }
  if (type === 'test_case.status_changed') {
    const tc = payload.test_case as { name?: string; html_url?: string } | undefined;
    const change = payload.status_change as { previous_status?: string; current_status?: { value?: string; reason?: string } } | undefined;
    const name = tc?.html_url ? `<${tc.html_url}|${esc(tc.name ?? 'a test')}>` : esc(tc?.name ?? 'a test');
    return { text: `:warning: ${name} in ${esc(repo)} is now ${esc(change?.current_status?.value ?? '?')} (was ${esc(change?.previous_status ?? '?')}). ${esc(change?.current_status?.reason ?? '')}` };
  }
  if (type === 'webhook.test') return { text: 'Railyard test event: this Slack webhook works.' };
  return null;
}

/** Posts one message with `@slack/webhook`, its requests made by the guarded transport. */
export async function sendToSlack(transport: WebhookTransport, url: string, message: IncomingWebhookSendArguments) {
  let status = 0;
  let excerpt = '';
  const fetchFn: FetchFunction = async (target, init) => {
    const answer = await transport.post(target, String(init?.body ?? ''), init?.headers ?? {}, init?.signal);
    status = answer.status;
    excerpt = answer.excerpt;
    const text = answer.body.toString('utf8');
    return {
      ok: answer.status >= 200 && answer.status < 300,
      status: answer.status,
      statusText: '',
      url: String(target),
      headers: { get: (name: string) => String(answer.headers[name.toLowerCase()] ?? '') || null, entries: () => Object.entries(answer.headers).map(([k, v]) => [k, String(v)] as [string, string]) },
      text: async () => text,
      json: async () => JSON.parse(text) as unknown,
      arrayBuffer: async () => new Uint8Array(answer.body).buffer,
    };
  };
  const hook = new IncomingWebhook(url, { fetch: fetchFn, timeout: transport.timeoutMs });
  try {
    await hook.send(message);
  } catch (error) {
    if (status) return { status, excerpt };
    throw error;
  }
  return { status, excerpt };
}
