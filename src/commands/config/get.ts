import { Args } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { CONFIG_KEYS, ConfigError, configPath, readConfig } from '../../cli/config.js';

export default class ConfigGet extends BaseCommand {
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
      if (value === undefined) throw new ConfigError(`${args.key} is not set in ${configPath()}`);
      this.out(`${masked(args.key, value)}\n`);
      return { [args.key]: masked(args.key, value) };
    }
    const shown = Object.fromEntries(Object.entries(config).map(([k, v]) => [k, masked(k, v)]));
    this.out(`# ${configPath()}\n` + Object.entries(shown).map(([k, v]) => `${k} = ${v}`).join('\n') + (Object.keys(shown).length ? '\n' : ''));
    return shown;
  }
}
