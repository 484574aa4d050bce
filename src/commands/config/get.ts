/** `railyard config get`: show the CLI configuration (or one key). */
import { Args } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { CONFIG_KEYS, configPath, readConfig } from '../../cli/config.js';

export default class ConfigGet extends BaseCommand {
  // No server involved: --api-url and --token do not apply (the help lists only what does).
  static override baseFlags = {} as unknown as (typeof BaseCommand)['baseFlags'];
  static override summary = 'Show the CLI configuration (or one key)';
  static override description = `Keys: ${CONFIG_KEYS.join(', ')}. The token is shown masked.`;
  static override examples = ['<%= config.bin %> config get', '<%= config.bin %> config get api-url'];
  static override args = { key: Args.string({ description: 'one key', options: [...CONFIG_KEYS] }) };

  async run() {
    const { args } = await this.parse(ConfigGet);
    const config = await readConfig();
    const masked = (key: string, value: string | undefined) =>
      key === 'token' && value ? `${value.slice(0, 4)}…(${value.length} chars)` : value;
    if (args.key) {
      const value = config[args.key as keyof typeof config];
      // Not a usage error (exit 2): the question was right, the answer is "nothing" (exit 1, as `git config` does).
      if (value === undefined) throw new Error(`${args.key} is not set in ${configPath()}`);
      this.out(`${masked(args.key, value)}\n`);
      return { [args.key]: masked(args.key, value) };
    }
    const shown = Object.fromEntries(Object.entries(config).map(([k, v]) => [k, masked(k, v)]));
    this.out(`# ${configPath()}\n` + Object.entries(shown).map(([k, v]) => `${k} = ${v}`).join('\n') + (Object.keys(shown).length ? '\n' : ''));
    return shown;
  }
}
