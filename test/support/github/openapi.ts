// Checks the emulator's REST answers against GitHub's published OpenAPI description (@octokit/openapi)
// and its webhook payloads against @octokit/openapi-webhooks, so the emulator cannot drift from GitHub.
// The REST description is ~65 MB: only the operations the emulator serves are extracted, once per
// process (and cached in node_modules/.cache by package version, so the next test process skips the big parse).
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';

/** The operations the emulator serves (OpenAPI path templates). */
export const SERVED_OPERATIONS: Array<[string, string]> = [
  ['get', '/rate_limit'],
  ['get', '/repos/{owner}/{repo}'],
  ['get', '/repos/{owner}/{repo}/pulls/{pull_number}'],
  ['get', '/repos/{owner}/{repo}/pulls'],
  ['post', '/repos/{owner}/{repo}/pulls'],
  ['patch', '/repos/{owner}/{repo}/pulls/{pull_number}'],
  ['put', '/repos/{owner}/{repo}/pulls/{pull_number}/merge'],
  ['patch', '/repos/{owner}/{repo}/git/refs/{ref}'],
  ['delete', '/repos/{owner}/{repo}/git/refs/{ref}'],
  ['get', '/repos/{owner}/{repo}/commits/{ref}/check-runs'],
  ['get', '/repos/{owner}/{repo}/commits/{ref}/status'],
  ['post', '/repos/{owner}/{repo}/statuses/{sha}'],
  ['post', '/repos/{owner}/{repo}/issues/{issue_number}/comments'],
  ['patch', '/repos/{owner}/{repo}/issues/comments/{comment_id}'],
  ['get', '/repos/{owner}/{repo}/collaborators/{username}/permission'],
  ['get', '/repos/{owner}/{repo}/installation'],
  ['post', '/app/installations/{installation_id}/access_tokens'],
  ['get', '/repos/{owner}/{repo}/rules/branches/{branch}'],
  ['get', '/repos/{owner}/{repo}/branches/{branch}'],
  ['get', '/repos/{owner}/{repo}/pulls/{pull_number}/reviews'],
];

export type ApiStyle = 'ghes' | 'dotcom';

export interface SchemaValidator {
  /** null when `body` is a valid `status` answer of the operation, else what is wrong. */
  response(method: string, template: string, status: number, body: unknown): string | null;
  /** null when the payload is valid for the event (and action), else what is wrong. */
  webhook(event: string, payload: Record<string, unknown>): string | null;
}

type Extracted = Record<string, Record<string, unknown | null>>; // "METHOD template" -> status -> schema (null: no body)

const require = createRequire(import.meta.url);
const SPECS: Record<ApiStyle, { rest: string; webhooks: string }> = {
  ghes: { rest: 'ghes-3.19.deref.json', webhooks: 'ghes-3.19.json' },
  dotcom: { rest: 'api.github.com.deref.json', webhooks: 'api.github.com.json' },
};
const cache = new Map<ApiStyle, Promise<SchemaValidator>>();

export function loadValidator(style: ApiStyle): Promise<SchemaValidator> {
  let v = cache.get(style);
  if (!v) {
    v = Promise.resolve().then(() => build(style));
    cache.set(style, v);
  }
  return v;
}

function packageDir(name: string): string {
  return dirname(require.resolve(`${name}/package.json`));
}

function extractRest(style: ApiStyle): Extracted {
  const dir = packageDir('@octokit/openapi');
  const version = (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string })
    .version;
  // node_modules/.cache, where tools keep caches: not the temp dir, which the suite must leave empty.
  const cacheDir = join(dir, '..', '..', '.cache', 'railyard');
  mkdirSync(cacheDir, { recursive: true });
  const cacheFile = join(cacheDir, `gh-openapi-${version}-${style}-${SERVED_OPERATIONS.length}.json`);
  if (existsSync(cacheFile)) {
    try {
      return JSON.parse(readFileSync(cacheFile, 'utf8')) as Extracted;
    } catch {
      // A broken cache file is rebuilt below.
    }
  }
  const spec = JSON.parse(readFileSync(join(dir, 'generated', SPECS[style].rest), 'utf8')) as {
    paths: Record<
      string,
      Record<string, { responses: Record<string, { content?: Record<string, { schema?: unknown }> }> }>
    >;
  };
  const out: Extracted = {};
  for (const [method, template] of SERVED_OPERATIONS) {
    const op = spec.paths[template]?.[method];
    if (!op)
      throw new Error(`@octokit/openapi ${SPECS[style].rest} has no ${method.toUpperCase()} ${template}`);
    const byStatus: Record<string, unknown | null> = {};
    for (const [status, r] of Object.entries(op.responses))
      byStatus[status] = r.content?.['application/json']?.schema ?? null;
    out[`${method.toUpperCase()} ${template}`] = byStatus;
  }
  const tmp = `${cacheFile}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(out));
  renameSync(tmp, cacheFile);
  return out;
}

/** GitHub's error body (basic-error), for statuses an operation does not describe (401, 403 rate limits…). */
const BASIC_ERROR = {
  type: 'object',
  required: ['message', 'documentation_url'],
  properties: {
    message: { type: 'string' },
    documentation_url: { type: 'string' },
    url: { type: 'string' },
    status: { type: 'string' },
    errors: { type: 'array' },
  },
};

function build(style: ApiStyle): SchemaValidator {
  const rest = extractRest(style);
  const ajv = new Ajv({ strict: false, allErrors: false, validateSchema: false });
  (addFormatsModule as unknown as (a: Ajv) => void)(ajv);
  const compiled = new Map<string, ValidateFunction>();
  const compile = (key: string, schema: unknown): ValidateFunction => {
    let f = compiled.get(key);
    if (!f) {
      f = ajv.compile(openApiNullable(schema) as object);
      compiled.set(key, f);
    }
    return f;
  };
  const describe = (f: ValidateFunction) =>
    (f.errors ?? [])
      .slice(0, 5)
      .map(
        (e) =>
          `${e.instancePath || '/'} ${e.message ?? ''}${e.params && 'additionalProperty' in e.params ? ` (${String(e.params.additionalProperty)})` : ''}`,
      )
      .join('; ');

  let webhookAjv: { ajv: Ajv; specId: string; names: Set<string> } | null = null;
  const webhooks = () => {
    if (!webhookAjv) {
      const doc = JSON.parse(
        readFileSync(
          join(packageDir('@octokit/openapi-webhooks'), 'generated', SPECS[style].webhooks),
          'utf8',
        ),
      ) as {
        components: { schemas: Record<string, unknown> };
      };
      const wa = new Ajv({ strict: false, allErrors: false, validateSchema: false });
      (addFormatsModule as unknown as (a: Ajv) => void)(wa);
      // Commit author emails come from git as written (e.g. `ci@localhost`); GitHub forwards them unchecked.
      wa.addFormat('email', /@/);
      const specId = `https://railyard.test/webhooks-${style}.json`;
      wa.addSchema({ $id: specId, components: doc.components } as object);
      webhookAjv = { ajv: wa, specId, names: new Set(Object.keys(doc.components.schemas)) };
    }
    return webhookAjv;
  };

  return {
    response(method, template, status, body) {
      const op = rest[`${method.toUpperCase()} ${template}`];
      const described = op?.[String(status)];
      if (op && described === undefined && status < 400) return `status ${status} is not a documented answer`;
      // Error answers GitHub describes without a body (e.g. DELETE git/refs 422) still carry its error body.
      if (described === null && status < 400)
        return body === undefined ? null : `status ${status} has no body in the description, got one`;
      const schema = described ?? BASIC_ERROR;
      const key = described == null ? 'basic-error' : `${method} ${template} ${status}`;
      try {
        const f = compile(key, schema);
        return f(body) ? null : describe(f);
      } catch (e) {
        return `cannot check against the description: ${String(e)}`;
      }
    },
    webhook(event, payload) {
      const w = webhooks();
      const base = `webhook-${event.replace(/_/g, '-')}`;
      const name = typeof payload.action === 'string' ? `${base}-${payload.action.replace(/_/g, '-')}` : base;
      if (!w.names.has(name)) return `no schema ${name} in @octokit/openapi-webhooks`;
      let f = compiled.get(`webhook ${name}`);
      if (!f) {
        f = w.ajv.compile({ $ref: `${w.specId}#/components/schemas/${name}` });
        compiled.set(`webhook ${name}`, f);
      }
      return f(payload) ? null : describe(f);
    },
  };
}

/** OpenAPI 3.0's `nullable: true` next to anyOf/allOf (no `type`) is not JSON Schema: rewrite it as "or null". */
function openApiNullable(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(openApiNullable);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) out[k] = openApiNullable(v);
  // Ajv checks `enum` before `nullable`: a nullable enum must list null itself.
  if (out.nullable === true && Array.isArray(out.enum) && !out.enum.includes(null))
    out.enum = [...(out.enum as unknown[]), null];
  if (out.nullable === true && out.type === undefined) {
    delete out.nullable;
    return { anyOf: [out, { type: 'null' }] };
  }
  return out;
}
