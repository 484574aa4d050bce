// Renders every command's `--help` with oclif's own Help class into build/help-cache.json, which
// bin/run.js prints without loading oclif (src/cli/fast-path.ts says when). Run by `npm run build`
// after `oclif manifest`. The texts are rendered as oclif prints them to a pipe with no colour and no
// user settings: in a child process whose stdout is a pipe, with a fresh HOME and no colour or
// width variables. test/cli/fast-path.test.ts compares each text with oclif's live output.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

if (process.argv[2] === '--render') {
  // The child: stdout is a pipe; each help is captured from oclif's writes to it.
  const { Config, loadHelpClass } = await import('@oclif/core');
  const config = await Config.load(root);
  const Help = await loadHelpClass(config);
  const manifest = JSON.parse(readFileSync(join(root, 'oclif.manifest.json'), 'utf8'));
  const commands = {};
  const write = process.stdout.write.bind(process.stdout);
  for (const [id, command] of Object.entries(manifest.commands)) {
    if (command.hasDynamicHelp) continue; // its help is computed at run time
    let text = '';
    process.stdout.write = (chunk) => {
      text += String(chunk);
      return true;
    };
    try {
      await new Help(config, config.pjson.oclif.helpOptions ?? config.pjson.helpOptions).showHelp([...id.split(':'), '--help']);
    } finally {
      process.stdout.write = write;
    }
    commands[id] = text;
  }
  write(JSON.stringify(commands));
} else {
  const home = mkdtempSync(join(tmpdir(), 'railyard-help-cache-'));
  try {
    const env = { PATH: process.env.PATH, HOME: home, NO_COLOR: '1', OCLIF_SKIP_NEW_VERSION_CHECK: 'true' };
    const child = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--render'], {
      cwd: root,
      env,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      maxBuffer: 64 * 1024 * 1024,
    });
    if (child.status !== 0) throw new Error(`help-cache: rendering failed (${child.status}): ${child.stderr}`);
    const require = createRequire(join(root, 'package.json'));
    const cache = {
      oclif: JSON.parse(readFileSync(require.resolve('@oclif/core/package.json'), 'utf8')).version,
      manifest: createHash('sha256').update(readFileSync(join(root, 'oclif.manifest.json'))).digest('hex'),
      width: 80,
      commands: JSON.parse(child.stdout),
    };
    writeFileSync(join(root, 'build', 'help-cache.json'), JSON.stringify(cache) + '\n');
    console.log(`help-cache: ${Object.keys(cache.commands).length} commands`);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}
