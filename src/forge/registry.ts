/**
 * The forges a server can run: one line each in FORGES, naming the description its folder exports
 * (`src/forge/<name>/description.ts`: flags, settings, start-up lines, web pages, driver).
 * `railyard serve` derives its forge flags, their exclusions, its "say where pull requests come
 * from" guard, the settings and the start-up lines from this list; the server creates the driver
 * of the forge picked (the sandbox when none is) and links to its pages.
 *
 * A driver's modules are imported only when its forge is picked: a server on the sandbox or the git
 * forge never loads Octokit or @gitbeaker (their module graphs were about a third of what a server
 * loaded at start, paid again by every test file that starts one). The descriptions import no SDK.
 */
import { git } from './git/description.js';
import { github } from './github/description.js';
import { gitlab } from './gitlab/description.js';
import { sandbox } from './sandbox/description.js';
import type { DriverCommon, ForgeDescription, ForgeDriver, ForgeFlag } from './types.js';

export type { DriverCommon };

/** The forges, in the order `serve` names them. */
const FORGES: ForgeDescription[] = [github, gitlab, git, sandbox];

/** The forge whose driver runs when none is picked (an in-process server of tests and benchmarks). */
const DEFAULT_FORGE = sandbox;

/** The forges this build knows (and any registered since). */
export function forges(): readonly ForgeDescription[] {
  return FORGES;
}

/**
 * Adds a forge to the list, after the others (a test's throwaway forge; a forge of this build is
 * one line in FORGES instead). Refused when its kind or one of its flags is taken.
 */
export function registerForge(description: ForgeDescription): void {
  if (FORGES.some((f) => f.kind === description.kind))
    throw new Error(`a forge "${description.kind}" is registered already`);
  const taken = Object.keys(description.flags).filter((name) => FORGES.some((f) => name in f.flags));
  if (taken.length)
    throw new Error(`forge "${description.kind}": --${taken.join(', --')} belong to another forge`);
  if (!(description.picker in description.flags))
    throw new Error(
      `forge "${description.kind}": its picker --${description.picker} is not one of its flags`,
    );
  FORGES.push(description);
}

/** The forge of this kind; throws when there is none. */
export function forgeNamed(kind: string): ForgeDescription {
  const forge = FORGES.find((f) => f.kind === kind);
  if (!forge) throw new Error(`no forge "${kind}" (forges: ${FORGES.map((f) => f.kind).join(', ')})`);
  return forge;
}

/** A forge's flag as `serve` declares it: the flag picking a forge excludes those picking the others. */
export type ServeFlag = ForgeFlag & { exclusive?: string[] };

/** Every forge's `serve` flags, in the list's order. */
export function forgeFlags(): Record<string, ServeFlag> {
  const pickers = FORGES.map((f) => f.picker);
  const flags: Record<string, ServeFlag> = {};
  for (const forge of FORGES) {
    for (const [name, flag] of Object.entries(forge.flags)) {
      flags[name] = name === forge.picker ? { ...flag, exclusive: pickers.filter((p) => p !== name) } : flag;
    }
  }
  return flags;
}

/** The forge `serve`'s parsed flags pick (its picker given: true, or a value), if any. */
export function pickedForge(flags: Readonly<Record<string, unknown>>): ForgeDescription | undefined {
  return FORGES.find((f) => flags[f.picker] !== undefined && flags[f.picker] !== false);
}

/** What `serve` says when no forge is picked. */
export function noForgeMessage(): string {
  const hints = FORGES.map((f) => f.hint);
  return `say where pull requests come from: ${hints.slice(0, -1).join(', ')}${hints.length > 1 ? ' or ' : ''}${hints.at(-1) ?? ''}`;
}

/** A forge and its settings (from its description's `settings`). */
export interface ForgeChoice {
  kind: string;
  settings: unknown;
}

/** The driver of the forge chosen (the sandbox's, with its defaults, when none is), with the forge's web pages. */
export async function createDriver(
  choice: ForgeChoice | undefined,
  common: DriverCommon,
): Promise<ForgeDriver> {
  const forge = choice ? forgeNamed(choice.kind) : DEFAULT_FORGE;
  const settings = choice ? choice.settings : {};
  const driver = await forge.driver(settings, common);
  const links = forge.links?.(settings);
  return links ? { ...driver, links } : driver;
}
