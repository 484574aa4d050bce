/** CODEOWNERS files (GitHub/GitLab syntax): which owners a test's file has. */
import ignore from 'ignore';

interface Rule {
  matches: (path: string) => boolean;
  owners: string[];
}

/**
 * A CODEOWNERS file (GitHub / GitLab syntax): gitignore-style patterns, each followed by owners;
 * the last matching line wins; a pattern without owners unassigns. GitLab `[Section]` headers
 * are skipped. Matching uses the `ignore` package (gitignore semantics).
 */
export class CodeOwners {
  private readonly rules: Rule[] = [];

  constructor(text: string) {
    for (const raw of text.split(/\r?\n/)) {
      const line = raw.replace(/(^|\s)#.*$/, '').trim();
      if (!line || /^\^?\[.*\]/.test(line)) continue;
      const [pattern, ...owners] = line.split(/\s+/);
      const matcher = ignore().add(pattern);
      this.rules.push({ matches: (path) => matcher.ignores(path), owners });
    }
  }

  /** The owners of a repository-relative path ([] when none or the path is unknown). */
  ownersOf(path: string | null | undefined): string[] {
    if (!path) return [];
    const relative = path.replace(/\\/g, '/').replace(/^\.?\/+/, '');
    if (!relative || relative.startsWith('../')) return [];
    for (let i = this.rules.length - 1; i >= 0; i--) {
      try {
        if (this.rules[i].matches(relative)) return this.rules[i].owners;
      } catch {
        return [];
      }
    }
    return [];
  }
}
