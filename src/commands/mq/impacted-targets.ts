/** `railyard mq impacted-targets`: set the impacted targets of a pull request head SHA (parallel queues). */
import { readFile } from 'node:fs/promises';
import { Args, Flags } from '@oclif/core';
import { BaseCommand, prNumber, queueFlags } from '../../cli/base-command.js';
import { ConfigError } from '../../cli/config.js';

export default class ImpactedTargets extends BaseCommand {
  static override summary = 'Set the impacted targets of a pull request head SHA (parallel queues)';
  static override description =
    'The last upload for a head SHA wins. --all marks the PR as impacting everything; --none means it impacts nothing. ' +
    'Without --sha the head SHA of the submitted PR is used. In a file, blank lines and lines starting with # are skipped; ' +
    'repeated targets are sent once. An empty list is refused: say --none.';
  static override examples = [
    '<%= config.bin %> mq impacted-targets 123 --sha 4f1c2e9 --target //app:web --target //lib:core',
    '<%= config.bin %> mq impacted-targets 123 --sha 4f1c2e9 --file targets.txt',
    '<%= config.bin %> mq impacted-targets 123 --all   # the head SHA of the submitted PR',
  ];
  static override args = { pr: Args.string({ description: 'pull request number', required: true }) };
  static override flags = {
    ...queueFlags,
    sha: Flags.string({ description: 'head SHA of the pull request (default: the head of the submitted PR)' }),
    target: Flags.string({ char: 't', description: 'an impacted target (repeatable)', multiple: true, exclusive: ['file', 'all', 'none'] }),
    file: Flags.string({ description: 'file with one target per line (- for stdin)', exclusive: ['target', 'all', 'none'] }),
    all: Flags.boolean({ description: 'the PR impacts every target', exclusive: ['target', 'file', 'none'] }),
    none: Flags.boolean({ description: 'the PR impacts no target', exclusive: ['target', 'file', 'all'] }),
  };

  async run() {
    const { args, flags } = await this.parse(ImpactedTargets);
    const number = prNumber(args.pr);
    if (number < 1) throw new ConfigError('pr: must be at least 1');
    let targets: string[] | 'ALL';
    if (flags.all) targets = 'ALL';
    else if (flags.none) targets = [];
    else if (flags.target) targets = targetList(flags.target, '--target', false);
    else if (flags.file) {
      const text = flags.file === '-' ? await readStdin() : await readFile(flags.file, 'utf8').catch((e: Error) => {
        throw new ConfigError(`--file: cannot read ${flags.file}: ${e.message}`);
      });
      targets = targetList(text.split(/\r?\n/), `--file ${flags.file}`, true);
    } else throw new ConfigError('give the targets: --target T (repeatable), --file F, --all or --none');
    const repo = await this.repo(flags.repo);
    const client = await this.client(flags);
    // The PR's head as the queue knows it: a checkout's HEAD may be a merge commit (CI checks out
    // refs/pull/N/merge), and targets set for a SHA that is not the head are never used.
    const sha = flags.sha ?? (await client.call('getSubmittedPullRequest', { repo, targetBranch: flags.branch, pr: { number } })).prSha;
    const body = { repo, targetBranch: flags.branch, pr: { number, sha }, impactedTargets: targets };
    await client.call('setImpactedTargets', body);
    this.out(`Impacted targets of #${number} at ${sha.slice(0, 12)}: ${targets === 'ALL' ? 'ALL' : `${targets.length} target(s)`}\n`);
    return {};
  }
}

/** Trimmed, without blank lines, repeats or (in a file) `#` comments; an empty result is refused (that is what --none says). */
function targetList(lines: readonly string[], source: string, comments: boolean): string[] {
  const kept = lines.map((line) => line.trim()).filter((line) => line !== '' && !(comments && line.startsWith('#')));
  const targets = [...new Set(kept)];
  if (targets.length === 0) throw new ConfigError(`${source}: no targets given; to say the PR impacts nothing, use --none`);
  return targets;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
