// Branch rules in the GitHub emulator (rulesets and classic branch protection) and pull-request
// reviews: what a PR into a protected branch still waits for (`mergeable_state: "blocked"`), which
// ref updates GitHub refuses with 422 and its message, and the JSON of GET rules/branches/{branch},
// GET branches/{branch} and GET pulls/{n}/reviews (routes in routes-rules.ts).
import type { Ci } from './ci.js';
import type { Hooks } from './hooks.js';
import { commitObjectJson, iso, nodeId, pullJson, userJson } from './json.js';
import { prFacts } from './payloads.js';
import type { Pr, Repo, World } from './world.js';

/**
 * Branch rules on one branch: a ruleset (default) or classic branch protection. What GitHub does
 * with them here: `mergeable_state: "blocked"` while a PR into the branch misses approvals, has
 * changes requested, misses a required check on its head or has unresolved conversations; ref
 * updates refused with 422 (REST) for actors not in `bypass` when `requirePullRequest` is set, or
 * when a required check has not succeeded on the new commit.
 */
export interface BranchRules {
  /** 'ruleset': listed by GET rules/branches/{branch}; 'classic': shown by GET branches/{branch}. Default 'ruleset'. */
  kind?: 'ruleset' | 'classic';
  /** Approving reviews a PR needs (latest review per reviewer counts). */
  requiredApprovals?: number;
  /** Check run names / status contexts that must have succeeded on a PR's head (and on a pushed commit). */
  requiredChecks?: string[];
  /** Unresolved review conversations block (see setUnresolvedConversations). */
  requireConversationResolution?: boolean;
  /** Direct updates of the branch are refused ("Changes must be made through a pull request."). */
  requirePullRequest?: boolean;
  /** Logins that may update the branch anyway (a ruleset's bypass list, classic "allow specified actors"). */
  bypass?: string[];
}
export type ReviewState = 'APPROVED' | 'CHANGES_REQUESTED' | 'COMMENTED' | 'DISMISSED';

export class Protection {
  constructor(
    private readonly w: World,
    private readonly hooks: Hooks,
    private readonly ci: Ci,
  ) {}

  /** The latest review per reviewer (COMMENTED reviews do not replace an approval or a change request). */
  latestReviews(p: Pr): Map<string, ReviewState> {
    const m = new Map<string, ReviewState>();
    for (const rv of p.reviews) if (rv.state !== 'COMMENTED') m.set(rv.user, rv.state);
    return m;
  }

  blockedBy(r: Repo, p: Pr): string[] {
    const rules = r.rules.get(p.base);
    if (!rules) return [];
    const out: string[] = [];
    const latest = [...this.latestReviews(p).values()];
    const approvals = latest.filter((s) => s === 'APPROVED').length;
    if ((rules.requiredApprovals ?? 0) > approvals)
      out.push(`${(rules.requiredApprovals ?? 0) - approvals} approving review(s) missing`);
    if (latest.includes('CHANGES_REQUESTED')) out.push('changes requested');
    for (const name of rules.requiredChecks ?? [])
      if (this.ci.checkState(r, p.headSha, name) !== 'success') out.push(`required check ${name}`);
    if (rules.requireConversationResolution && p.unresolvedConversations > 0)
      out.push('unresolved conversations');
    return out;
  }

  /** GitHub's message when `actor` may not move `branch` to `sha`, or null when the update is allowed. */
  refusal(r: Repo, branch: string, actor: string, sha: string): string | null {
    const rules = r.rules.get(branch);
    if (!rules || (rules.bypass ?? []).includes(actor)) return null;
    if (rules.requirePullRequest)
      return rules.kind === 'classic'
        ? `Protected branch update failed for refs/heads/${branch}.`
        : 'Repository rule violations found\n\nChanges must be made through a pull request.\n\n';
    for (const name of rules.requiredChecks ?? [])
      if (this.ci.checkState(r, sha, name) !== 'success')
        return rules.kind === 'classic'
          ? `Required status check "${name}" is expected.`
          : `Repository rule violations found\n\nRequired status check "${name}" is expected.\n\n`;
    return null;
  }

  // --- changes ------------------------------------------------------------------------------

  /** Sets (or with null removes) the rules of a branch. */
  protect(r: Repo, branch: string, rules: BranchRules | null): void {
    if (rules === null) r.rules.delete(branch);
    else r.rules.set(branch, { kind: 'ruleset', ...rules });
  }

  /** A review by `user` on the PR's current head (`pull_request_review` submitted). */
  review(r: Repo, p: Pr, user: string, state: ReviewState): void {
    const rv = { id: 80_000_000 + this.w.id(), user, state, commitId: p.headSha, at: Date.now() };
    p.reviews.push(rv);
    const snapshot: Pr = { ...p };
    this.hooks.emit(
      r,
      'pull_request_review',
      (async () => {
        const baseSha = (await this.w.branchSha(r, snapshot.base)) ?? snapshot.headSha;
        const {
          merged: _m,
          mergeable: _a,
          mergeable_state: _s,
          merged_by: _b,
          comments: _c,
          review_comments: _rc,
          maintainer_can_modify: _mc,
          commits: _co,
          additions: _ad,
          deletions: _de,
          changed_files: _cf,
          rebaseable: _rb,
          ...pull
        } = pullJson(this.w.urls, r, prFacts(r, snapshot, baseSha, null, 'unknown'));
        return {
          action: 'submitted',
          review: { ...this.reviewJson(r, p, rv), state: rv.state.toLowerCase() },
          pull_request: pull,
          sender: userJson(this.w.urls, user),
        };
      })(),
    );
  }

  // --- JSON -----------------------------------------------------------------------------------

  reviewJson(r: Repo, p: Pr, rv: Pr['reviews'][number]) {
    const html = `${this.w.urls.web}/${r.owner}/${r.name}/pull/${p.number}`;
    const api = `${this.w.urls.api}/repos/${r.owner}/${r.name}/pulls/${p.number}`;
    return {
      id: rv.id,
      node_id: nodeId('PullRequestReview', rv.id),
      user: userJson(this.w.urls, rv.user),
      body: '',
      state: rv.state,
      html_url: `${html}#pullrequestreview-${rv.id}`,
      pull_request_url: api,
      _links: { html: { href: `${html}#pullrequestreview-${rv.id}` }, pull_request: { href: api } },
      submitted_at: iso(rv.at),
      commit_id: rv.commitId,
      author_association: r.perms.get(rv.user) === 'admin' ? 'OWNER' : 'COLLABORATOR',
    };
  }

  /** GET rules/branches/{branch}: the rules of rulesets that apply to the branch (classic protection is not listed). */
  rulesJson(r: Repo, branch: string) {
    const rules = r.rules.get(branch);
    if (!rules || rules.kind === 'classic') return [];
    const source = {
      ruleset_source_type: 'Repository',
      ruleset_source: `${r.owner}/${r.name}`,
      ruleset_id: 1,
    };
    const out: unknown[] = [];
    if (
      rules.requirePullRequest ||
      rules.requiredApprovals !== undefined ||
      rules.requireConversationResolution
    )
      out.push({
        type: 'pull_request',
        parameters: {
          dismiss_stale_reviews_on_push: false,
          require_code_owner_review: false,
          require_last_push_approval: false,
          required_approving_review_count: rules.requiredApprovals ?? 0,
          required_review_thread_resolution: rules.requireConversationResolution ?? false,
        },
        ...source,
      });
    if (rules.requiredChecks?.length)
      out.push({
        type: 'required_status_checks',
        parameters: {
          required_status_checks: rules.requiredChecks.map((context) => ({ context })),
          strict_required_status_checks_policy: false,
        },
        ...source,
      });
    return out;
  }

  /** GET branches/{branch}: the branch, its head commit and (classic protection) its protection summary. */
  async branchJson(r: Repo, branch: string, sha: string) {
    const api = `${this.w.urls.api}/repos/${r.owner}/${r.name}`;
    const url = `${api}/branches/${branch}`;
    const rules = r.rules.get(branch);
    const classic = rules?.kind === 'classic' ? rules : undefined;
    const checks = classic?.requiredChecks ?? [];
    return {
      name: branch,
      commit: commitObjectJson(this.w.urls, r, await this.w.commitJson(r, sha)),
      _links: { self: url, html: `${this.w.urls.web}/${r.owner}/${r.name}/tree/${branch}` },
      protected: classic !== undefined,
      protection: {
        enabled: classic !== undefined,
        required_status_checks: {
          enforcement_level: checks.length ? 'non_admins' : 'off',
          contexts: checks,
          checks: checks.map((context) => ({ context, app_id: null })),
        },
        ...(classic && (classic.requiredApprovals !== undefined || classic.requirePullRequest)
          ? {
              required_pull_request_reviews: {
                url: `${url}/protection/required_pull_request_reviews`,
                dismiss_stale_reviews: false,
                require_code_owner_reviews: false,
                required_approving_review_count: classic.requiredApprovals ?? 0,
              },
            }
          : {}),
        ...(classic?.requireConversationResolution
          ? { required_conversation_resolution: { enabled: true } }
          : {}),
      },
      protection_url: `${url}/protection`,
    };
  }
}
