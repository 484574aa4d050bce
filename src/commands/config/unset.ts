/** `railyard config unset`: remove a CLI configuration value (its default or environment variable applies again). */
import { Args } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { CONFIG_KEYS, configPath, readConfig, writeConfig, type ConfigKey } from '../../cli/config.js';

export default class ConfigUnset extends BaseCommand {
  // No server involved: --api-url and --token do not apply (the help lists only what does).
  static override baseFlags = {} as unknown as (typeof BaseCommand)['baseFlags'];
  static override summary =
    'Remove a CLI configuration value (its default or environment variable applies again)';
  static override examples = ['<%= config.bin %> config unset repo', '<%= config.bin %> config unset token'];
  static override args = {
    key: Args.string({ description: 'key', options: [...CONFIG_KEYS], required: true }),
  };

  async run() {
    const { args } = await this.parse(ConfigUnset);
    const key = args.key as ConfigKey;
    const config = await readConfig();
    const was = key in config;
    delete config[key];
    if (was) await writeConfig(config);
    this.out(was ? `${key} removed from ${configPath()}\n` : `${key} was not set in ${configPath()}\n`);
    return { [key]: null, removed: was };
  }
}
