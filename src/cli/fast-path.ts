/**
 * The CLI's start-up fast path: `railyard --version` and `railyard <command>
 * --help` answered without loading @oclif/core, whose index and `Config.load` are most of a
 * start-up. `bin/run.js` asks `fastOutput(argv)` first and runs oclif whenever it answers undefined.
 *
 * It prints only what oclif would print, byte for byte, and only where that is certain:
 * - `--version` as the first argument: oclif's user agent (`name/version platform-arch node-vX`),
 *   off Windows and WSL (oclif names the platform `wsl` there).
 * - `<command id words> --help` and nothing else: the text oclif's own Help class rendered at build
 *   time (scripts/help-cache.mjs → build/help-cache.json), for stdout that is not a terminal (oclif
 *   then wraps at 80 columns), without OCLIF_COLUMNS, when ansis would not colour it, and while the
 *   cache was made from this very oclif.manifest.json and @oclif/core version. A command whose help
 *   is computed at run time (`hasDynamicHelp`) is not in the cache.
 * Never when oclif could do more than print: DEBUG is set, a user plugin is installed (the data
 * dir's package.json, which may bring hooks), or the user has a help theme. test/cli/fast-path.test.ts
 * compares every cached text with oclif's live output, and checks that no plugin has an `init` hook
 * (oclif runs those before it prints the version or a help).
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { arch, homedir, platform, release, tmpdir } from 'node:os';
import { join } from 'node:path';

/** build/help-cache.json: written by scripts/help-cache.mjs at `npm run build`. */
export interface HelpCache {
  /** The @oclif/core version that rendered it. */
  oclif: string;
  /** SHA-256 (hex) of the oclif.manifest.json it was rendered from. */
  manifest: string;
  /** The width oclif wrapped at (80: stdout not a terminal). */
  width: number;
  /** Command id (`mq:status`) → the exact bytes `railyard mq status --help` writes to stdout. */
  commands: Record<string, string>;
}

const root = new URL('../../', import.meta.url);
const readJson = (url: URL | string) => JSON.parse(readFileSync(url, 'utf8'));

/** `railyard` lower-cased and scoped as oclif does (`RAILYARD_DATA_DIR`). */
const env = (key: string) => process.env[`RAILYARD_${key}`] || undefined;

function home(): string {
  return process.env.HOME || homedir() || tmpdir();
}

/** oclif's `Config.dir(category)` for the `railyard` dirname, off Windows. */
function oclifDir(category: 'data' | 'config'): string {
  const base = process.env[`XDG_${category.toUpperCase()}_HOME`] || join(home(), category === 'data' ? '.local/share' : '.config');
  return join(base, 'railyard');
}

/** Where oclif could do something besides printing (or print it otherwise): then it runs. */
function oclifMayDiffer(): boolean {
  if (platform() === 'win32' || process.env.DEBUG || env('DEBUG')) return true;
  const dataDir = env('DATA_DIR') || oclifDir('data');
  if (existsSync(join(dataDir, 'package.json'))) return true; // user plugins
  const configDir = env('CONFIG_DIR') || oclifDir('config');
  return existsSync(join(configDir, 'theme.json'));
}

/** Whether oclif would name this platform `wsl` (is-wsl's tests): then it answers. */
function maybeWsl(): boolean {
  if (platform() !== 'linux') return false;
  if (release().toLowerCase().includes('microsoft')) return true;
  try {
    if (readFileSync('/proc/version', 'utf8').toLowerCase().includes('microsoft')) return true;
  } catch {
    // no /proc/version: go on
  }
  return existsSync('/proc/sys/fs/binfmt_misc/WSLInterop') || existsSync('/run/WSL');
}

function version(): string | undefined {
  if (maybeWsl()) return undefined;
  const pjson = readJson(new URL('package.json', root)) as { name: string; version?: string };
  const cpu = arch() === 'ia32' ? 'x86' : arch();
  return `${pjson.name}/${pjson.version || '0.0.0'} ${platform()}-${cpu} node-${process.version}\n`;
}

function help(words: string[]): string | undefined {
  if (process.stdout.isTTY || process.env.OCLIF_COLUMNS) return undefined;
  const cacheUrl = new URL('build/help-cache.json', root);
  if (!existsSync(cacheUrl)) return undefined;
  const cache = readJson(cacheUrl) as HelpCache;
  const text = Object.hasOwn(cache.commands, words.join(':')) ? cache.commands[words.join(':')] : undefined;
  if (text === undefined) return undefined;
  // The oclif that would answer, and whether it would colour (ansis, as oclif's help uses it).
  const require = createRequire(new URL('package.json', root));
  const corePjson = require.resolve('@oclif/core/package.json');
  if ((readJson(corePjson) as { version: string }).version !== cache.oclif) return undefined;
  const ansis = createRequire(corePjson)('ansis') as { bold: (s: string) => string };
  if (ansis.bold('x') !== 'x') return undefined;
  const manifest = readFileSync(new URL('oclif.manifest.json', root));
  if (createHash('sha256').update(manifest).digest('hex') !== cache.manifest) return undefined;
  return text;
}

/** What oclif would print for `argv` when it is certain (see above); undefined: run oclif. */
export function fastOutput(argv: readonly string[]): string | undefined {
  const isVersion = argv[0] === '--version';
  const isHelp =
    argv.length >= 2 && argv.at(-1) === '--help' && argv.slice(0, -1).every((word) => /^[a-z][a-z0-9-]*$/.test(word));
  if (!isVersion && !isHelp) return undefined;
  try {
    if (oclifMayDiffer()) return undefined;
    return isVersion ? version() : help(argv.slice(0, -1));
  } catch {
    return undefined; // anything unexpected: oclif answers
  }
}
