/**
 * What a PR that GitHub calls `blocked` waits for (docs/decisions.md): the branch's rules
 * (`GET rules/branches/{branch}`: rulesets; `GET branches/{branch}`: classic protection) say which
 * approvals and checks are required; the PR's reviews (`GET pulls/{n}/reviews`) and the checks on
 * its head say which are missing. All readable with read access. Railyard's own
 * `railyard/merge-queue` status never counts: teams make it required so nothing merges around the
 * queue, and it can only turn green once the queue has landed the PR.
 */
import type { Repo } from '../../contract/index.js';
import { QUEUE_STATUS_CONTEXT, type CheckRunLike, type StatusLike } from './checks.js';
import { statusOf, type GitHubClient } from './client.js';
import type { GitHubPull } from './facts.js';

interface BranchRules {
  approvals: number;
  contexts: Set<string>;
  conversations: boolean;
  at: number;
}

/** How long the rules of a branch are reused before they are read again. */
const RULES_TTL_MS = 30_000;

export class BranchProtection {
  private readonly rules = new Map<string, BranchRules>();

  constructor(private readonly client: GitHubClient) {}

  /**
   * For a `blocked` PR: one line saying what GitHub waits for, or undefined when nothing but
   * Railyard's own status holds it. Other PRs: undefined without a request.
   */
  async waitsFor(repo: Repo, pull: GitHubPull): Promise<string | undefined> {
    if (pull.mergeable_state !== 'blocked' || pull.state !== 'open' || pull.draft) return undefined;
    const rules = await this.rulesOf(repo, pull.base.ref);
    const out: string[] = [];
    if (rules.approvals > 0) {
      const reviews = await this.client.getCached<Array<{ state: string; user: { login: string } | null }>>(
        repo.owner,
        repo.name,
        'GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews',
        { pull_number: pull.number, per_page: 100 },
      );
      const latest = new Map<string, string>();
      for (const r of reviews) if (r.user && r.state !== 'COMMENTED' && r.state !== 'PENDING') latest.set(r.user.login, r.state);
      const approved = [...latest.values()].filter((s) => s === 'APPROVED').length;
      const requested = [...latest].filter(([, s]) => s === 'CHANGES_REQUESTED').map(([u]) => u);
      if (approved < rules.approvals) {
        const missing = rules.approvals - approved;
        out.push(`${missing} approving review${missing === 1 ? '' : 's'} missing`);
      }
      if (requested.length) out.push(`changes requested by ${requested.join(', ')}`);
    }
    const contexts = [...rules.contexts].filter((c) => c !== QUEUE_STATUS_CONTEXT);
    if (contexts.length) {
      const [runs, combined] = await Promise.all([
        this.client.getCached<{ check_runs: CheckRunLike[] }>(repo.owner, repo.name, 'GET /repos/{owner}/{repo}/commits/{ref}/check-runs', {
          ref: pull.head.sha,
          per_page: 100,
        }),
        this.client.getCached<{ statuses: StatusLike[] }>(repo.owner, repo.name, 'GET /repos/{owner}/{repo}/commits/{ref}/status', {
          ref: pull.head.sha,
          per_page: 100,
        }),
      ]);
      for (const name of contexts) {
        const run = runs.check_runs.find((r) => r.name === name);
        const status = combined.statuses.find((s) => s.context === name);
        const ok =
          (run !== undefined && run.status === 'completed' && ['success', 'neutral', 'skipped'].includes(run.conclusion ?? '')) ||
          status?.state === 'success';
        if (ok) continue;
        const pending = (run !== undefined && run.status !== 'completed') || status?.state === 'pending';
        out.push(`required check ${name} ${run === undefined && status === undefined ? 'not reported' : pending ? 'pending' : 'failing'}`);
      }
    }
    if (out.length > 0) return `GitHub waits for: ${out.join('; ')}`;
    // Nothing we can see: Railyard's own required status, or something REST does not show.
    if (rules.contexts.has(QUEUE_STATUS_CONTEXT)) return undefined;
    return rules.conversations
      ? 'GitHub waits for: unresolved conversations (or another branch rule)'
      : 'GitHub reports it blocked by a branch rule';
  }

  /** The required approvals and checks of a branch: rulesets and classic protection together. */
  private async rulesOf(repo: Repo, branch: string): Promise<BranchRules> {
    const key = `${repo.owner}/${repo.name}:${branch}`.toLowerCase();
    const hit = this.rules.get(key);
    if (hit && Date.now() - hit.at < RULES_TTL_MS) return hit;
    const rules: BranchRules = { approvals: 0, contexts: new Set(), conversations: false, at: Date.now() };
    const quietly = async <T>(read: () => Promise<T>): Promise<T | null> => {
      try {
        return await read();
      } catch (error) {
        // No access to one of them (a token without the scope, an old GHES): use what the other says.
        if ([403, 404].includes(statusOf(error) ?? 0)) return null;
        throw error;
      }
    };
    type Rule = { type: string; parameters?: Record<string, unknown> };
    const [ruleset, classic] = await Promise.all([
      quietly(() => this.client.getCached<Rule[]>(repo.owner, repo.name, 'GET /repos/{owner}/{repo}/rules/branches/{branch}', { branch })),
      quietly(() =>
        this.client.getCached<{
          protection?: {
            required_status_checks?: { contexts?: string[]; checks?: Array<{ context: string }> } | null;
            required_pull_request_reviews?: { required_approving_review_count?: number } | null;
            required_conversation_resolution?: { enabled?: boolean } | null;
          };
        }>(repo.owner, repo.name, 'GET /repos/{owner}/{repo}/branches/{branch}', { branch }),
      ),
    ]);
    for (const rule of ruleset ?? []) {
      const p = rule.parameters ?? {};
      if (rule.type === 'pull_request') {
        rules.approvals = Math.max(rules.approvals, Number(p.required_approving_review_count ?? 0));
        if (p.required_review_thread_resolution === true) rules.conversations = true;
      }
      if (rule.type === 'required_status_checks')
        for (const c of (p.required_status_checks as Array<{ context: string }> | undefined) ?? []) rules.contexts.add(c.context);
    }
    const prot = classic?.protection;
    if (prot) {
      for (const c of prot.required_status_checks?.contexts ?? []) rules.contexts.add(c);
      for (const c of prot.required_status_checks?.checks ?? []) rules.contexts.add(c.context);
      rules.approvals = Math.max(rules.approvals, prot.required_pull_request_reviews?.required_approving_review_count ?? 0);
      if (prot.required_conversation_resolution?.enabled) rules.conversations = true;
    }
    this.rules.set(key, rules);
    return rules;
  }
}
