/** `railyard demo`: watch a merge queue land real pull requests in a throwaway git repository. */
import { existsSync, realpathSync } from 'node:fs';
import { delimiter, isAbsolute, join, relative } from 'node:path';
import { Command, Flags } from '@oclif/core';

/**
 * `demo --open` as it can be typed where this demo was started: through `npm run demo` (a
 * checkout), `npm run demo -- --open`; `railyard` when the one on PATH is this one; else node and
 * this checkout's bin/run.js (relative when under the current directory).
 */
function openCommand(): string {
  if (process.env.npm_lifecycle_event === 'demo') return 'npm run demo -- --open';
  const bin = process.argv[1] ?? '';
  const real = (path: string) => {
    try {
      return realpathSync(path);
    } catch {
      return null;
    }
  };
  const self = real(bin);
  for (const dir of (process.env.PATH ?? '').split(delimiter).filter(Boolean)) {
    const candidate = join(dir, 'railyard');
    if (existsSync(candidate)) {
      if (self !== null && real(candidate) === self) return 'railyard demo --open';
      break; // another railyard comes first on PATH
    }
  }
  const rel = relative(process.cwd(), bin);
  const path = rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : bin;
  return `node ${/\s/.test(path) ? JSON.stringify(path) : path} demo --open`;
}

export default class Demo extends Command {
  static override summary = 'Watch a merge queue land real pull requests in a throwaway git repository';

  static override description =
    'Creates a small project in a temporary git repository with 8 pull requests (one breaks its check, ' +
    'one conflicts, one breaks only in combination with another), starts a Railyard server on an embedded ' +
    'database, submits every PR to a batching queue through the HTTP client, shows the queue live, and ' +
    'prints what merged, what failed and why, and the final history of main. Needs git and nothing else.';

  static override examples = [
    '<%= config.bin %> demo',
    '<%= config.bin %> demo --open',
    '<%= config.bin %> demo --keep',
  ];

  static override flags = {
    keep: Flags.boolean({
      description: 'Keep the temporary repository, database and check logs, and print where they are',
      default: false,
    }),
    'timeout-seconds': Flags.integer({
      description: 'Give up when the queue has not settled after this long',
      default: 120,
      min: 10,
    }),
    open: Flags.boolean({
      description:
        'When the queue has settled, keep the demo server up and print the address of its web dashboard (and the token to paste) until Ctrl-C',
      default: false,
    }),
    'checks-sandbox': Flags.string({
      description: 'How the checks are isolated, as for serve: none, or bwrap (bubblewrap must be installed)',
      options: ['none', 'bwrap'],
      default: 'none',
    }),
    json: Flags.boolean({
      description: 'Print the outcome as one JSON object at the end (progress still goes to stderr)',
      default: false,
    }),
  };

  /** A mistyped flag names the one meant (src/cli/did-you-mean.ts). */
  protected override async catch(error: Error): Promise<unknown> {
    (await import('../cli/did-you-mean.js')).withFlagHint(error);
    return super.catch(error);
  }

  async run(): Promise<void> {
    const { flags } = await this.parse(Demo);
    const [{ runDemo }, { Chalk }, { useColor }] = await Promise.all([
      import('../demo/run.js'),
      import('chalk'),
      import('../cli/color.js'),
    ]);
    const out = flags.json ? process.stderr : process.stdout;
    const color = useColor(out);
    const c = new Chalk({ level: color ? 1 : 0 });
    const checksSandbox = flags['checks-sandbox'] as 'none' | 'bwrap';
    const { isolationProblem } = await import('../runner/index.js');
    const problem = await isolationProblem({ sandbox: checksSandbox });
    if (problem) this.error(problem, { exit: 2 });
    try {
      const result = await runDemo({
        keep: flags.keep,
        open: flags.open,
        openCommand: openCommand(),
        checksSandbox,
        timeoutMs: flags['timeout-seconds'] * 1000,
        out,
        live: Boolean(out.isTTY) && process.env.TERM !== 'dumb',
        paint: { bold: c.bold, dim: c.dim, green: c.green, red: c.red, yellow: c.yellow, cyan: c.cyan },
      });
      if (flags.json) this.log(JSON.stringify(result));
    } catch (error) {
      this.error(`demo failed: ${error instanceof Error ? error.message : String(error)}`, { exit: 1 });
    }
  }
}
