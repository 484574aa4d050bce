/** Documented exit codes of the CLI. */
export const EXIT = { ok: 0, error: 1, usage: 2, auth: 4 } as const;
