#!/usr/bin/env node
// The `railyard` binary. `--version` and `<command> --help` are answered from build/ without loading
// @oclif/core when the answer is certainly the one oclif would print (src/cli/fast-path.ts);
// everything else, and any doubt, goes to oclif.
const argv = process.argv.slice(2);
const fast =
  argv[0] === '--version' || argv.at(-1) === '--help'
    ? await import('../build/cli/fast-path.js').then(
        (module) => module.fastOutput(argv),
        () => undefined,
      )
    : undefined;
if (fast !== undefined) {
  process.stdout.write(fast);
} else {
  const { execute } = await import('@oclif/core');
  await execute({ dir: import.meta.url });
}
