/**
 * Whether to colour output on a stream: FORCE_COLOR (non-"0") forces it on, NO_COLOR (any
 * value) forces it off, otherwise only on a TTY that is not "dumb".
 */
export function useColor(stream: NodeJS.WriteStream = process.stdout, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '' ) return env.FORCE_COLOR !== '0' && env.FORCE_COLOR !== 'false';
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  return Boolean(stream.isTTY) && env.TERM !== 'dumb';
}
