import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { readFileSync } from 'node:fs';

// ajv-formats is CommonJS with a default export.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

interface Operation {
  responses: Record<string, { content?: Record<string, { schema?: object }> }>;
}
type Document = { paths: Record<string, Record<string, Operation>>; components: object };

/** The committed document: the contract the e2e suite holds every response to. */
const document = JSON.parse(
  readFileSync(new URL('../../openapi/openapi.json', import.meta.url), 'utf8'),
) as Document;

const ajv = addFormats(new Ajv({ strict: false, allErrors: true }));
ajv.addSchema(closed({ components: document.components }), 'openapi');

// A parameter may be empty (`/api/users//prevnames`): that request reaches the operation too.
const routes = Object.entries(document.paths).map(([template, operations]) => ({
  pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]*')}$`),
  operations,
}));
const validators = new Map<object, ValidateFunction>();

export interface ObservedResponse {
  method: string;
  url: string;
  status: number;
  contentType: string | null;
  body: unknown;
}

/**
 * Fails when a response of a documented operation disagrees with the document: an
 * undocumented status or content type, or a body outside its schema (including a field
 * the schema does not list). Routes the document does not have (the 404 tests, the static
 * page) are not operations, and pass.
 */
export function assertDocumented({
  method,
  url,
  status,
  contentType,
  body,
}: ObservedResponse): void {
  const path = new URL(url).pathname;
  const operation = routes.find((r) => r.pattern.test(path))?.operations[method.toLowerCase()];
  if (!operation) return;
  const where = `${method} ${path} → ${status}`;
  const response = operation.responses[String(status)];
  if (!response) throw new Error(`OpenAPI: ${where} is not a documented status`);
  const mediaType = contentType?.split(';')[0].trim() ?? '';
  const content = response.content?.[mediaType];
  if (!content) throw new Error(`OpenAPI: ${where} has undocumented content type "${mediaType}"`);
  if (mediaType !== 'application/json' || !content.schema) return;
  let validate = validators.get(content.schema);
  if (!validate) {
    validate = ajv.compile(closed(rebase(content.schema)));
    validators.set(content.schema, validate);
  }
  if (!validate(body)) {
    throw new Error(
      `OpenAPI: ${where} body disagrees with the document: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body)}`,
    );
  }
}

/** Points the document's local references at the schema registered as "openapi". */
function rebase(schema: object): object {
  return JSON.parse(
    JSON.stringify(schema).replaceAll('"#/components/', '"openapi#/components/'),
  ) as object;
}

/**
 * Objects that list their properties admit no others, unless they say so; a nullable enum
 * admits null (as OpenAPI 3.0's generators read `nullable`: the document keeps null out of
 * enum values, where openapi-zod-client would write it into a z.enum that does not compile).
 */
function closed<T>(schema: T): T {
  if (Array.isArray(schema)) return schema.map(closed) as T;
  if (schema === null || typeof schema !== 'object') return schema;
  const copy = Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, closed(v)]));
  if ('properties' in copy && !('additionalProperties' in copy)) copy.additionalProperties = false;
  if (copy.nullable === true && Array.isArray(copy.enum)) {
    copy.enum = [...(copy.enum as unknown[]), null];
  }
  return copy as T;
}

/** Fails unless `value` is valid against the document's component schema `name`. */
export function assertMatchesSchema(name: string, value: unknown): void {
  const validate = ajv.getSchema(`openapi#/components/schemas/${name}`);
  if (!validate) throw new Error(`OpenAPI: no component schema ${name}`);
  if (!validate(value)) {
    throw new Error(
      `OpenAPI: ${JSON.stringify(value)} disagrees with ${name}: ${ajv.errorsText(validate.errors)}`,
    );
  }
}
