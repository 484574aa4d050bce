/**
 * The start-up fast path (src/cli/fast-path.ts, bin/run.js): `--version` and every command's
 * `--help` print exactly what oclif prints live, and oclif answers whenever that is not certain.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { HelpCache } from '../../src/cli/fast-path.js';
import { BIN, isolatedEnv, railyard, type CliResult } from '../support/cli.js';

const root = resolve(import.meta.dirname, '../..');
const manifest = JSON.parse(readFileSync(join(root, 'oclif.manifest.json'), 'utf8')) as {
  commands: Record<string, { hasDynamicHelp?: boolean }>;
};
const cache = JSON.parse(readFileSync(join(root, 'build/help-cache.json'), 'utf8')) as HelpCache;
/** @oclif/core as this CLI resolves it, for scripts run from elsewhere. */
const core = JSON.stringify(pathToFileURL(createRequire(join(root, 'package.json')).resolve('@oclif/core')).href);

function node(args: string[], env: Record<string, string>): Promise<CliResult> {
  return new Promise((done, reject) => {
    const child = spawn(process.execPath, args, { env, cwd: env.HOME, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => done({ code: code ?? -1, stdout, stderr }));
  });
}

/**
 * oclif itself, live (no fast path): @oclif/core's `run` for this CLI with `args`, its errors to
 * the CLI's own handler as bin/run.js hands them (src/cli/cli-errors.ts).
 */
function oclif(args: string[], env: Record<string, string>): Promise<CliResult> {
  const errors = JSON.stringify(`file://${join(root, 'build/cli/cli-errors.js')}`);
  const script =
    `import { run, flush, handle } from ${core}; const { handleError } = await import(${errors});` +
    `await run(${JSON.stringify(args)}, ${JSON.stringify(`file://${BIN}`)}).then(() => flush()).catch((error) => handleError(error, 'railyard', handle));`;
  return node(['--input-type=module', '-e', script], env);
}

/** oclif's live `--help` of each command, captured in one process (Config.load per command, as a run does). */
async function liveHelps(ids: string[], env: Record<string, string>): Promise<Record<string, string>> {
  const script = `
    import { run } from ${core};
    const write = process.stdout.write.bind(process.stdout);
    const out = {};
    for (const id of ${JSON.stringify(ids)}) {
      let text = '';
      process.stdout.write = (chunk) => { text += String(chunk); return true; };
      try { await run([...id.split(':'), '--help'], ${JSON.stringify(root)}); } finally { process.stdout.write = write; }
      out[id] = text;
    }
    write(JSON.stringify(out));`;
  const r = await node(['--input-type=module', '-e', script], env);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as Record<string, string>;
}

/** Whether the fast path would answer `argv` under `env` (the module bin/run.js asks). */
async function fastAnswers(argv: string[], env: Record<string, string>): Promise<boolean> {
  const script = `const { fastOutput } = await import(${JSON.stringify(`file://${join(root, 'build/cli/fast-path.js')}`)}); process.stdout.write(String(fastOutput(${JSON.stringify(argv)}) !== undefined));`;
  const r = await node(['--input-type=module', '-e', script], env);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout === 'true';
}

describe('CLI start-up fast path', () => {
  it('the help cache holds every command whose help is static, and each text is byte-identical to oclif live', async () => {
    const ids = Object.keys(manifest.commands).filter((id) => !manifest.commands[id]!.hasDynamicHelp);
    expect(ids.length).toBeGreaterThan(40);
    expect(Object.keys(cache.commands).sort()).toEqual([...ids].sort());
    const live = await liveHelps(ids, isolatedEnv());
    for (const id of ids) expect(cache.commands[id], id).toBe(live[id]);
  }, 240_000);

  it('railyard <command> --help prints the cached text, exactly as oclif, for every command', async () => {
    const env = isolatedEnv();
    expect(await fastAnswers(['mq', 'status', '--help'], env)).toBe(true);
    const ids = Object.keys(cache.commands);
    for (let i = 0; i < ids.length; i += 4) {
      await Promise.all(
        ids.slice(i, i + 4).map(async (id) => {
          const r = await railyard([...id.split(':'), '--help'], env);
          expect(r, id).toEqual({ code: 0, stdout: cache.commands[id], stderr: '' });
        }),
      );
    }
  }, 240_000);

  it('railyard --version prints what oclif prints', async () => {
    const env = isolatedEnv();
    expect(await fastAnswers(['--version'], env)).toBe(true);
    const fast = await railyard(['--version'], env);
    expect(fast.code).toBe(0);
    expect(fast.stdout).toMatch(/^railyard-mq\/\d+\.\d+\.\d+ [a-z\d]+-[a-z\d]+ node-v\d+\.\d+\.\d+\n$/);
    expect(fast).toEqual(await oclif(['--version'], env));
  }, 60_000);

  it('no plugin has an init hook (oclif runs those before --version and --help; the fast path does not)', async () => {
    const { Config } = await import('@oclif/core');
    const config = await Config.load(root);
    for (const plugin of config.getPluginsList()) expect(plugin.hooks.init ?? [], plugin.name).toEqual([]);
  });

  it('leaves to oclif what it cannot be sure of, and the output is then oclif’s', async () => {
    const env = isolatedEnv();
    const coloured: Record<string, string> = { ...env, FORCE_COLOR: '1' };
    delete coloured.NO_COLOR;
    // Colour forced, another width, an argument before --help, a mistyped command.
    const cases: Array<[string[], Record<string, string>]> = [
      [['mq', 'status', '--help'], coloured],
      [['mq', 'status', '--help'], { ...env, OCLIF_COLUMNS: '120' }],
      [['mq', 'status', '7', '--help'], env],
      [['mq', 'statsu', '--help'], env],
    ];
    for (const [args, e] of cases) {
      expect(await fastAnswers(args, e), args.join(' ')).toBe(false);
      expect(await railyard(args, e), args.join(' ')).toEqual(await oclif(args, e));
    }
    const colour = await railyard(['mq', 'status', '--help'], coloured);
    expect(colour.stdout).toContain('\x1b[1mUSAGE');
    const wide = await railyard(['mq', 'status', '--help'], { ...env, OCLIF_COLUMNS: '120' });
    expect(wide.stdout).not.toBe(cache.commands['mq:status']);
  }, 120_000);

  it('leaves --version and --help to oclif when the user has plugins or a help theme', async () => {
    const plugins = isolatedEnv();
    mkdirSync(join(plugins.HOME, '.local/share/railyard'), { recursive: true });
    writeFileSync(join(plugins.HOME, '.local/share/railyard/package.json'), '{"oclif":{"plugins":[]}}');
    const themed = isolatedEnv();
    mkdirSync(join(themed.XDG_CONFIG_HOME!, 'railyard'), { recursive: true });
    writeFileSync(join(themed.XDG_CONFIG_HOME!, 'railyard/theme.json'), '{}');
    for (const env of [plugins, themed, { ...isolatedEnv(), DEBUG: 'nothing' }]) {
      expect(await fastAnswers(['--version'], env)).toBe(false);
      expect(await fastAnswers(['mq', 'status', '--help'], env)).toBe(false);
    }
    expect(await railyard(['--version'], plugins)).toEqual(await oclif(['--version'], plugins));
  }, 60_000);
});
