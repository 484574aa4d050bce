import type { z } from 'zod';
import { API_PREFIX, routes, type OperationName } from '../../src/contract/index.js';
import type { TestServer } from '../support/server.js';

export const REPO = { host: 'github.com', owner: 'acme', name: 'web' };

export interface Answer {
  status: number;
  text: string;
  headers: Headers;
  /** Parsed JSON body (undefined when not JSON). */
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

async function answer(res: Response): Promise<Answer> {
  const text = await res.text();
  let json: unknown;
  if ((res.headers.get('content-type') ?? '').startsWith('application/json')) json = JSON.parse(text);
  return { status: res.status, text, headers: res.headers, json };
}

/** Calls an operation of the route table over real HTTP. */
export async function call(
  server: TestServer,
  op: OperationName,
  body?: unknown,
  options: { token?: string | null; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const def = routes[op];
  const headers: Record<string, string> = { ...options.headers };
  const token = options.token === undefined ? server.token : options.token;
  if (token !== null) headers['x-api-token'] = token;
  const base = server.url.slice(0, -API_PREFIX.length) + API_PREFIX + def.path;
  if (def.method === 'GET') {
    const query = new URLSearchParams((body as Record<string, string> | undefined) ?? {}).toString();
    return answer(await fetch(query ? `${base}?${query}` : base, { headers }));
  }
  headers['content-type'] ??= 'application/json';
  return answer(await fetch(base, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body ?? {}) }));
}

/** Like call() but fails the test unless the answer is 200; returns the JSON body. */
export async function ok(server: TestServer, op: OperationName, body?: unknown, token?: string) {
  const a = await call(server, op, body, token === undefined ? {} : { token });
  if (a.status !== 200) throw new Error(`${op} answered ${a.status}: ${a.text}`);
  return a.json;
}

type Def = { type: string; [key: string]: unknown };
const defOf = (schema: z.ZodType): Def => (schema as unknown as { _zod: { def: Def } })._zod.def;

/**
 * Compares a value with a zod schema key by key, recursively: every required key present,
 * no key the schema does not declare, leaves of the right type. Returns the mismatches.
 */
export function shapeMismatches(schema: z.ZodType, value: unknown, path = '$'): string[] {
  const def = defOf(schema);
  switch (def.type) {
    case 'optional':
      return value === undefined ? [] : shapeMismatches(def.innerType as z.ZodType, value, path);
    case 'nullable':
      return value === null ? [] : shapeMismatches(def.innerType as z.ZodType, value, path);
    case 'object': {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) return [`${path}: expected an object`];
      const shape = def.shape as Record<string, z.ZodType>;
      const out: string[] = [];
      for (const [key, field] of Object.entries(shape)) {
        const v = (value as Record<string, unknown>)[key];
        if (v === undefined && !field.safeParse(undefined).success) out.push(`${path}.${key}: missing`);
        else out.push(...shapeMismatches(field, v, `${path}.${key}`));
      }
      for (const key of Object.keys(value)) if (!(key in shape)) out.push(`${path}.${key}: not in the contract`);
      return out;
    }
    case 'array':
      if (!Array.isArray(value)) return [`${path}: expected an array`];
      return value.flatMap((v, i) => shapeMismatches(def.element as z.ZodType, v, `${path}[${i}]`));
    case 'union': {
      const results = (def.options as z.ZodType[]).map((o) => shapeMismatches(o, value, path));
      return results.some((r) => r.length === 0) ? [] : (results[0] ?? [`${path}: no union option`]);
    }
    default:
      return schema.safeParse(value).success ? [] : [`${path}: ${JSON.stringify(value)} does not match`];
  }
}

/** Paths of the required fields of a request schema (objects walked recursively), e.g. `repo.host`. */
export function requiredPaths(schema: z.ZodType, prefix = ''): string[] {
  let def = defOf(schema);
  while (def.type === 'pipe') def = defOf(def.in as z.ZodType);
  if (def.type !== 'object') return [];
  const out: string[] = [];
  for (const [key, field] of Object.entries(def.shape as Record<string, z.ZodType>)) {
    if (field.safeParse(undefined).success) continue;
    const path = prefix ? `${prefix}.${key}` : key;
    out.push(path, ...requiredPaths(field, path));
  }
  return out;
}

/** A deep copy of `body` without the field at `path`. */
export function without(body: unknown, path: string): unknown {
  const copy = structuredClone(body) as Record<string, unknown>;
  const keys = path.split('.');
  let node = copy;
  for (const k of keys.slice(0, -1)) node = node[k] as Record<string, unknown>;
  delete node[keys[keys.length - 1]];
  return copy;
}

export const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
