import { readFileSync } from 'node:fs';

/** An operation of the committed document, as the specs read it. */
export interface DocumentedOperation {
  operationId: string;
  summary?: string;
  description?: string;
  tags?: string[];
  parameters?: DocumentedParameter[];
  requestBody?: { content: Record<string, { schema: object }> };
  responses: Record<string, { content?: Record<string, { example?: unknown }> }>;
}

/** The committed OpenAPI document (`openapi/openapi.json`). */
export const openApiDocument = JSON.parse(
  readFileSync(new URL('../../openapi/openapi.json', import.meta.url), 'utf8'),
) as {
  openapi: string;
  paths: Record<string, Record<string, DocumentedOperation>>;
  components: { securitySchemes: Record<string, object>; schemas: Record<string, object> };
};

/** A publish body the document's examples use, with `fields` over it. */
export const documentedEvent = (fields: Record<string, unknown> = {}) => ({
  userId: 'documented',
  type: 'username',
  name: 'n',
  changedAt: '2024-06-07T15:30:00.000Z',
  ...fields,
});

interface DocumentedParameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required?: boolean;
  example?: unknown;
  schema?: { example?: unknown; $ref?: string; enum?: unknown[] };
}

interface DocumentedSchema {
  $ref?: string;
  allOf?: DocumentedSchema[];
  enum?: unknown[];
  example?: unknown;
  required?: string[];
  properties?: Record<string, DocumentedSchema>;
}

/** An operation of the document, with a request its examples make up. */
export interface ExampleOperation {
  /** `GET /api/users/{userId}/prevnames`. */
  name: string;
  method: string;
  operation: DocumentedOperation;
  /** The path with each parameter its example. */
  path: string;
  /** The required query parameters, from their examples (`name=old_name`), or ''. */
  query: string;
  /** A body of the required properties' examples, for an operation that takes one. */
  body?: Record<string, unknown>;
  /** What the operation needs that its document gives no example of. */
  missing: string[];
}

const schemas = openApiDocument.components.schemas as Record<string, DocumentedSchema>;

/** A schema with its reference followed. */
function resolve(schema: DocumentedSchema): DocumentedSchema {
  const ref = schema.$ref ?? schema.allOf?.find((part) => part.$ref)?.$ref;
  return ref ? { ...schemas[ref.replace('#/components/schemas/', '')], ...schema } : schema;
}

/** The schema's own example, or its first enumerated value. */
function exampleOf(schema: DocumentedSchema | undefined): unknown {
  if (!schema) return undefined;
  const resolved = resolve(schema);
  return resolved.example ?? resolved.enum?.[0];
}

/**
 * Every operation of the committed document, each with a request made of its examples: the
 * specs that visit every operation read them here, so a module that adds an operation edits
 * none of them (a required parameter without an example is `missing`).
 */
export const exampleOperations: ExampleOperation[] = Object.entries(openApiDocument.paths).flatMap(
  ([template, operations]) =>
    Object.entries(operations).map(([method, operation]) => {
      const missing: string[] = [];
      const parameters = (operation.parameters ?? [])
        .filter((parameter) => parameter.required)
        .map((parameter) => {
          const example = parameter.example ?? exampleOf(parameter.schema);
          if (example === undefined) missing.push(`${parameter.in} ${parameter.name}`);
          return { ...parameter, example: String(example) };
        });
      const path = template.replace(/\{([^}]+)\}/g, (_, name: string) =>
        encodeURIComponent(parameters.find((p) => p.in === 'path' && p.name === name)!.example),
      );
      const query = new URLSearchParams(
        parameters
          .filter((p) => p.in === 'query')
          .map((p): [string, string] => [p.name, p.example]),
      ).toString();
      const content = operation.requestBody?.content['application/json'];
      let body: Record<string, unknown> | undefined;
      if (content) {
        const schema = resolve(content.schema);
        body = Object.fromEntries(
          (schema.required ?? []).map((property) => {
            const example = exampleOf(schema.properties?.[property]);
            if (example === undefined) missing.push(`body ${property}`);
            return [property, example];
          }),
        );
      }
      const name = `${method.toUpperCase()} ${template}`;
      return { name, method: method.toUpperCase(), operation, path, query, body, missing };
    }),
);
