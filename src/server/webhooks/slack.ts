/**
 * The `slack` endpoint kind: the same events, as Slack incoming-webhook messages — one message per
 * pull-request outcome (merged, failed, canceled) and per test turning flaky or broken, the reason
 * as a sentence, links to the PR on its forge and to its dashboard page. Sent through Slack's
 * `@slack/webhook` over the guarded transport (same address rules, no redirects, deadline), with
 * none of the generic endpoints' signing headers.
 */
import type { FetchFunction, IncomingWebhookSendArguments } from '@slack/webhook';
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
  railyard?: {
    title?: string | null;
    detail?: string | null;
    pr_url?: string | null;
    repository?: { host?: string; owner?: string; name?: string };
  };
};

/** Escapes text for Slack's mrkdwn (a title cannot become a link or an @channel mention). */
const esc = (text: string) => text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
/** A URL inside `<url|label>`: the characters that would end it are percent-encoded. */
const href = (url: string) => url.replaceAll('<', '%3C').replaceAll('>', '%3E').replaceAll('|', '%7C').replaceAll(' ', '%20');
/** Failure details are quoted up to this length (a message is read in a channel, not a log). */
const DETAIL_CHARS = 500;

/** "because its check failed." — the reason code as the end of a sentence (contract/reasons.ts). */
function because(code: unknown): string {
  if (typeof code !== 'string' || !code) return '.';
  const text = explainReason(code);
  return ` because ${text.endsWith('.') ? text.slice(0, -1) : text}.`;
}

const OUTCOMES: Record<string, { icon: string; verb: string; reason: string }> = {
  'pull_request.merged': { icon: ':white_check_mark:', verb: 'was merged into', reason: 'merged_reason' },
  'pull_request.failed': { icon: ':x:', verb: 'failed in the merge queue of', reason: 'failure_reason' },
  'pull_request.canceled': { icon: ':no_entry_sign:', verb: 'was taken out of the merge queue of', reason: 'cancellation_reason' },
};

/** `owner/name` of a repository's web address (its path), or the address itself when it is not one. */
function repoOfUrl(url: string): string {
  try {
    return new URL(url).pathname.split('/').filter(Boolean).join('/') || url;
  } catch {
    return url;
  }
}

/**
 * The Slack message of one event, or null when Slack gets no message for it. A PR outcome is one
 * sentence naming the PR (a link to it on its forge), its title and author, what happened and why,
 * then the failure's detail quoted, and a link to the PR's page on the dashboard.
 */
export function slackMessage(type: string, payload: Payload): IncomingWebhookSendArguments | null {
  const repo = payload.repository ? `${payload.repository.owner}/${payload.repository.name}` : '';
  if (type.startsWith('pull_request.')) {
    const name = `${esc(repo)}#${String(payload.pr_number)}`;
    const prUrl = payload.railyard?.pr_url;
    const pr = prUrl ? `<${href(prUrl)}|${name}>` : name;
    const title = payload.railyard?.title ? ` “${esc(payload.railyard.title)}”` : '';
    const by = payload.author ? ` by ${esc(String(payload.author))}` : '';
    const branch = `\`${esc(String(payload.target_branch))}\``;
    const dashboard = typeof payload.http_details_url === 'string' ? `\n<${href(payload.http_details_url)}|Open it in the Railyard dashboard>` : '';
    const outcome = OUTCOMES[type];
    if (!outcome) return { text: `PR ${pr}${title}${by}: ${esc(String(payload.action))} (merge queue of ${branch}).${dashboard}` };
    let detail = payload.railyard?.detail ? String(payload.railyard.detail) : '';
    if (detail.length > DETAIL_CHARS) detail = `${detail.slice(0, DETAIL_CHARS)}…`;
    const quoted = type === 'pull_request.failed' && detail ? `\n${detail.split('\n').map((line) => `> ${esc(line)}`).join('\n')}` : '';
    return { text: `${outcome.icon} PR ${pr}${title}${by} ${outcome.verb} ${branch}${esc(because(payload[outcome.reason]))}${quoted}${dashboard}` };
  }
  if (type === 'test_case.status_changed') {
    const tc = payload.test_case as { name?: string; html_url?: string; repository?: { html_url?: string } } | undefined;
    // Flaky-test events name their repository by its web address (Trunk's shape), and by name in
    // `railyard` (an address may carry a GitLab instance's path prefix); events written before that, by the address.
    const named = payload.railyard?.repository;
    const where = named ? `${named.owner}/${named.name}` : tc?.repository?.html_url ? repoOfUrl(tc.repository.html_url) : repo;
    const change = payload.status_change as { previous_status?: string; current_status?: { value?: string; reason?: string } } | undefined;
    const name = tc?.html_url ? `<${href(tc.html_url)}|${esc(tc.name ?? 'a test')}>` : esc(tc?.name ?? 'a test');
    const reason = change?.current_status?.reason ? ` ${esc(change.current_status.reason)}` : '';
    return { text: `:warning: Test ${name} in ${esc(where)} is now ${esc(change?.current_status?.value ?? '?')} (was ${esc(change?.previous_status ?? '?')}).${reason}` };
  }
  if (type === 'webhook.test') return { text: 'Railyard test event: this Slack webhook works.' };
  return null;
}

/**
 * Posts one message with `@slack/webhook`, its requests made by the guarded transport. The SDK is
 * imported on the first Slack delivery: a server without a Slack endpoint never loads it.
 */
export async function sendToSlack(transport: WebhookTransport, url: string, message: IncomingWebhookSendArguments) {
  const { IncomingWebhook } = await import('@slack/webhook');
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
