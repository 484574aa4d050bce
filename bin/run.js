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
  // @oclif/core's index checks the Node version against its `engines` with semver (47 modules, a
  // tenth of a command's start) every time it loads. A plain `>=X.Y.Z` is compared here instead,
  // and the check skipped only when it passes: on an older Node oclif still checks and warns.
  const engineWarning = process.env.OCLIF_DISABLE_ENGINE_WARNING;
  if (engineWarning === undefined && (await nodeSatisfiesOclif()))
    process.env.OCLIF_DISABLE_ENGINE_WARNING = '1';
  // @oclif/core bundled into one file at build (scripts/cli-bundle.mjs): the same oclif, loaded
  // as one module instead of ~150.
  const { run, flush, handle } = await import('#oclif-core');
  // Not inherited by what a command starts (a server, checks, git).
  if (engineWarning === undefined) delete process.env.OCLIF_DISABLE_ENGINE_WARNING;
  // oclif's execute(), with the CLI's one error style (`Error: …`, one line, no help dump) for what
  // a command did not catch itself (build/cli/cli-errors.js); a bug's stack still goes to oclif.
  await run(argv, import.meta.url)
    .then(() => flush())
    .catch(async (error) => {
      const { handleError } = await import('../build/cli/cli-errors.js');
      await handleError(error, 'railyard', handle);
    });
}

/** Whether this Node meets @oclif/core's `engines.node` when that is a plain `>=X.Y.Z` (else: false, oclif checks). */
async function nodeSatisfiesOclif() {
  try {
    const { createRequire } = await import('node:module');
    const { readFileSync } = await import('node:fs');
    const pjson = createRequire(import.meta.url).resolve('@oclif/core/package.json');
    const wanted = /^>=\s*(\d+)\.(\d+)\.(\d+)$/.exec(
      JSON.parse(readFileSync(pjson, 'utf8')).engines?.node?.trim() ?? '',
    );
    if (!wanted) return false;
    const have = process.versions.node.split('.').map(Number);
    for (let i = 0; i < 3; i++) if (have[i] !== Number(wanted[i + 1])) return have[i] > Number(wanted[i + 1]);
    return true;
  } catch {
    return false;
  }
}
