// Branch rules in the emulator (rulesets and classic branch protection) and pull-request reviews:
// what a PR into a protected branch still waits for (`mergeable_state: "blocked"`), which ref
// updates GitHub refuses with 422 and its message, and the JSON of GET rules/branches/{branch},
// GET branches/{branch} and GET pulls/{n}/reviews (routes in routes-rules.ts).
import { commitObjectJson, iso, nodeId, pullJson, userJson } from './json.js';
import { EmulatorWebhooks } from './webhooks.js';
import {
  statusState,
  type BranchRules,
  type CheckConclusion,
  type Pr,
  type Repo,
  type ReviewState,
} from './types.js';

export abstract class EmulatorProtection extends EmulatorWebhooks {
  /** The latest state of a check (run by name or status by context) on a commit, or null when none reported. */
  checkState(r: Repo, sha: string, name: string): 'success' | 'failure' | 'error' | 'pending' | null {
    let out: 'success' | 'failure' | 'error' | 'pending' | null = null;
    let at = -1;
    for (const s of r.statuses)
      if (s.sha === sha && s.context === name && s.createdAt >= at) [out, at] = [s.state, s.createdAt];
    for (const c of r.checkRuns)
      if (c.headSha === sha && c.name === name && c.startedAt >= at) {
        out = c.status === 'completed' ? statusState(c.conclusion as CheckConclusion) : 'pending';
        at = c.startedAt;
      }
    return out;
  }

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
      if (this.checkState(r, p.headSha, name) !== 'success') out.push(`required check ${name}`);
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
      if (this.checkState(r, sha, name) !== 'success')
        return rules.kind === 'classic'
          ? `Required status check "${name}" is expected.`
          : `Repository rule violations found\n\nRequired status check "${name}" is expected.\n\n`;
    return null;
  }

  // --- test-facing ----------------------------------------------------------------------------

  protectBranch(owner: string, repo: string, branch: string, rules: BranchRules | null): void {
    const r = this.mustRepo(owner, repo);
    if (rules === null) r.rules.delete(branch);
    else r.rules.set(branch, { kind: 'ruleset', ...rules });
  }

  async review(owner: string, repo: string, number: number, user: string, state: ReviewState): Promise<void> {
    const r = this.mustRepo(owner, repo);
    const p = this.mustPr(r, number);
    const rv = { id: 80_000_000 + this.id(), user, state, commitId: p.headSha, at: Date.now() };
    p.reviews.push(rv);
    const snapshot: Pr = { ...p };
    this.emit(
      r,
      'pull_request_review',
      (async () => {
        const baseSha = (await this.resolve(r, `refs/heads/${snapshot.base}`)) ?? snapshot.headSha;
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
        } = pullJson(this.urls, r, this.prFacts(r, snapshot, baseSha, null, 'unknown'));
        return {
          action: 'submitted',
          review: { ...this.reviewJson(r, p, rv), state: rv.state.toLowerCase() },
          pull_request: pull,
          sender: userJson(this.urls, user),
        };
      })(),
    );
  }

  setUnresolvedConversations(owner: string, repo: string, number: number, count: number): void {
    this.mustPr(this.mustRepo(owner, repo), number).unresolvedConversations = count;
  }

  // --- JSON -----------------------------------------------------------------------------------

  reviewJson(r: Repo, p: Pr, rv: Pr['reviews'][number]) {
    const html = `${this.urls.web}/${r.owner}/${r.name}/pull/${p.number}`;
    const api = `${this.urls.api}/repos/${r.owner}/${r.name}/pulls/${p.number}`;
    return {
      id: rv.id,
      node_id: nodeId('PullRequestReview', rv.id),
      user: userJson(this.urls, rv.user),
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
    const api = `${this.urls.api}/repos/${r.owner}/${r.name}`;
    const url = `${api}/branches/${branch}`;
    const rules = r.rules.get(branch);
    const classic = rules?.kind === 'classic' ? rules : undefined;
    const checks = classic?.requiredChecks ?? [];
    return {
      name: branch,
      commit: commitObjectJson(this.urls, r, await this.commitJson(r, sha)),
      _links: { self: url, html: `${this.urls.web}/${r.owner}/${r.name}/tree/${branch}` },
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
