/**
 * Calls of the v2 API over real HTTP (Bearer token) and Trunk's published schemas
 * (test/fixtures/trunk/openapi-v2.json) to check its answers against with ajv.
 */
import { readFileSync } from 'node:fs';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { TestServer } from './server.js';

export interface V2Answer {
  status: number;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  headers: Headers;
}

/** `METHOD /v2/...` on the server, with its token as a Bearer key unless `token` says otherwise (null: none). */
export async function v2(
  server: TestServer,
  method: string,
  path: string,
  body?: unknown,
  token: string | null = server.token,
): Promise<V2Answer> {
  const headers: Record<string, string> = {};
  if (token !== null) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${server.url.replace(/\/v1$/, '')}/v2${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    // not JSON: left as text
  }
  return { status: response.status, body: parsed, headers: response.headers };
}

const FIXTURE = new URL('../fixtures/trunk/openapi-v2.json', import.meta.url);

/** Validators of Trunk's schemas by name. */
export function trunkSchemas(): { validate(name: string, value: unknown): string[]; names: string[] } {
  const doc = JSON.parse(readFileSync(FIXTURE, 'utf8')) as {
    components: { schemas: Record<string, unknown> };
  };
  const ajv = new Ajv({ strict: false, allErrors: true });
  (addFormatsModule as unknown as (a: Ajv) => void)(ajv);
  ajv.addSchema({ components: doc.components }, 'trunk');
  const compiled = new Map<string, ValidateFunction>();
  return {
    names: Object.keys(doc.components.schemas),
    validate(name, value) {
      if (!(name in doc.components.schemas)) throw new Error(`no schema ${name} in the fixture`);
      let fn = compiled.get(name);
      if (!fn) {
        fn = ajv.compile({ $ref: `trunk#/components/schemas/${name}` });
        compiled.set(name, fn);
      }
      return fn(value)
        ? []
        : (fn.errors ?? []).map(
            (e) => `${e.instancePath || '/'} ${e.message ?? ''} ${JSON.stringify(e.params)}`,
          );
    },
  };
}
