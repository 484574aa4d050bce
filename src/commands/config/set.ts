import { Args } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { CONFIG_KEYS, ConfigError, configPath, parseRepo, readConfig, writeConfig, type ConfigKey } from '../../cli/config.js';

export default class ConfigSet extends BaseCommand {
  static override summary = 'Set a CLI configuration value (stored with mode 0600)';
  static override examples = [
    '<%= config.bin %> config set api-url http://127.0.0.1:7311/v1',
    '<%= config.bin %> config set token "$RAILYARD_TOKEN"',
    '<%= config.bin %> config set org acme',
    '<%= config.bin %> config set repo github.com/acme/web',
  ];
  static override args = {
    key: Args.string({ description: 'key', options: [...CONFIG_KEYS], required: true }),
    value: Args.string({ description: 'value', required: true }),
  };

  async run() {
    const { args } = await this.parse(ConfigSet);
    const key = args.key as ConfigKey;
    if (key === 'api-url') {
      try {
        new URL(args.value);
      } catch {
        throw new ConfigError(`api-url: not a URL: "${args.value}"`);
      }
    }
    if (key === 'repo') parseRepo(args.value);
    const config = await readConfig();
    config[key] = args.value;
    await writeConfig(config);
    this.out(`${key} saved in ${configPath()}\n`);
    return { [key]: key === 'token' ? '(set)' : args.value };
  }
}
