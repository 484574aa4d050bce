/** `railyard config set`: set a CLI configuration value (stored with mode 0600). */
import { Args } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import {
  CONFIG_KEYS,
  ConfigError,
  configPath,
  parseRepo,
  readConfig,
  writeConfig,
  type ConfigKey,
} from '../../cli/config.js';

export default class ConfigSet extends BaseCommand {
  // No server involved: --api-url and --token do not apply (the help lists only what does).
  static override baseFlags = {} as unknown as (typeof BaseCommand)['baseFlags'];
  static override summary = 'Set a CLI configuration value (stored with mode 0600)';
  static override examples = [
    '<%= config.bin %> config set api-url http://127.0.0.1:7311/v1',
    'printf %s "$RAILYARD_TOKEN" | <%= config.bin %> config set token -   # from stdin: not in the shell history or ps',
    '<%= config.bin %> config set org acme',
    '<%= config.bin %> config set repo github.com/acme/web',
    "<%= config.bin %> config set api-version v2   # speak Trunk's v2 API (default v1)",
  ];
  static override args = {
    key: Args.string({ description: 'key', options: [...CONFIG_KEYS], required: true }),
    value: Args.string({ description: 'value ("-" reads it from stdin)', required: true }),
  };

  async run() {
    const { args } = await this.parse(ConfigSet);
    const key = args.key as ConfigKey;
    let value = args.value;
    if (value === '-') {
      const chunks: Buffer[] = [];
      for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
      value = Buffer.concat(chunks).toString('utf8').trim();
      if (!value)
        throw new ConfigError(
          `${key}: nothing on stdin (pipe the value in, e.g. printf %s "$VALUE" | railyard config set ${key} -)`,
        );
    }
    if (key === 'api-url') {
      try {
        new URL(value);
      } catch {
        throw new ConfigError(`api-url: not a URL: "${value}"`);
      }
    }
    if (key === 'repo') parseRepo(value);
    if (key === 'api-version') {
      if (!/^v[12]$/i.test(value))
        throw new ConfigError(`api-version: expected v1 or v2, got ${JSON.stringify(value)}`);
      value = value.toLowerCase();
    }
    const config = await readConfig();
    config[key] = value;
    await writeConfig(config);
    this.out(`${key} saved in ${configPath()}\n`);
    return { [key]: key === 'token' ? '(set)' : value };
  }
}
