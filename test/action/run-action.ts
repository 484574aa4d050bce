/**
 * Runs the committed GitHub Action bundle (dist/index.js) as the runner does, for the tests of
 * this folder: inputs as INPUT_* variables, an event file, and the output and step-summary files
 * read back after it exits.
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tempDirSync } from '../support/tmp.js';

const DIST = resolve(import.meta.dirname, '../../dist/index.js');

export interface ActionRun {
  code: number;
  stdout: string;
  outputs: Record<string, string>;
  summary: string;
  ms: number;
}

/** Parses the GITHUB_OUTPUT file (name<<delimiter ... delimiter blocks). */
function parseOutputs(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const m = /^([^<]+)<<(.+)$/.exec(lines[i]);
    if (!m) continue;
    const value: string[] = [];
    for (i++; i < lines.length && lines[i] !== m[2]; i++) value.push(lines[i]);
    out[m[1]] = value.join('\n');
  }
  return out;
}

/** Runs the committed bundle exactly as the runner does: INPUT_* variables, event file, output files. */
export function runAction(
  inputs: Record<string, string>,
  opts: {
    event?: object;
    eventName?: string;
    onStart?: (pid: number) => void;
    /** Called with everything printed so far, each time the Action prints. */
    onOutput?: (stdout: string) => void;
    env?: Record<string, string>;
    cwd?: string;
  } = {},
): Promise<ActionRun> {
  const dir = tempDirSync('railyard-action-');
  const eventPath = join(dir, 'event.json');
  writeFileSync(eventPath, JSON.stringify(opts.event ?? pullRequestEvent(7)));
  const outputPath = join(dir, 'output');
  const summaryPath = join(dir, 'summary');
  writeFileSync(outputPath, '');
  writeFileSync(summaryPath, '');
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    GITHUB_EVENT_PATH: eventPath,
    GITHUB_EVENT_NAME: opts.eventName ?? 'pull_request',
    GITHUB_OUTPUT: outputPath,
    GITHUB_STEP_SUMMARY: summaryPath,
    GITHUB_REPOSITORY: 'acme/web',
    GITHUB_SERVER_URL: 'https://github.com',
    GITHUB_RUN_ID: '1',
    ...opts.env,
  };
  for (const [name, value] of Object.entries(inputs)) env[`INPUT_${name.toUpperCase()}`] = value;
  const started = Date.now();
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [DIST], { env, cwd: opts.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    opts.onStart?.(child.pid as number);
    let stdout = '';
    const print = (d: Buffer) => {
      stdout += d.toString();
      opts.onOutput?.(stdout);
    };
    child.stdout.on('data', print);
    child.stderr.on('data', print);
    child.on('error', reject);
    child.on('close', (code) =>
      resolvePromise({
        code: code ?? -1,
        stdout,
        outputs: parseOutputs(readFileSync(outputPath, 'utf8')),
        summary: readFileSync(summaryPath, 'utf8'),
        ms: Date.now() - started,
      }),
    );
  });
}

/** A `pull_request` event of PR `number` of acme/web (labeled) into main. */
export function pullRequestEvent(number: number) {
  return {
    action: 'labeled',
    number,
    pull_request: {
      number,
      head: { sha: 'a'.repeat(40), ref: `feature-${number}` },
      base: { ref: 'main' },
      title: `PR ${number}`,
    },
    repository: { full_name: 'acme/web', name: 'web', owner: { login: 'acme' } },
  };
}
