import type {
  OpenAPIObject,
  OperationObject,
  ReferenceObject,
  SchemaObject,
} from '@nestjs/swagger';

/**
 * What the document says of every operation of a kind, whatever its controller: rules the
 * decorators cannot state (or would have to repeat on each route), applied once the document
 * is built.
 */

/** The security scheme of the administration routes (ADMIN_TOKEN). */
export const ADMIN_SCHEME = 'admin';

/** The tag every Server-Sent Events operation has besides its controller's. */
export const STREAM_TAG = 'stream';
export const STREAM_TAG_DESCRIPTION =
  'Name change events live (Server-Sent Events): open a stream with an EventSource, not with a generated request function, which would wait for the end of a body that never ends. Generators can leave this tag out.';

const STREAM_GUIDANCE = `**How to consume it.** Open it with an EventSource: the browser's own \`new EventSource(url)\`, or in Node the \`eventsource\` package (the same API). It parses the messages as they arrive, keeps the last id, and reconnects by itself, sending it as \`Last-Event-ID\`, so no event is missed or repeated across reconnects. To resume in a new EventSource, pass the last id you processed as \`?lastEventId=\`. This service's repository has a typed one in \`clients/typescript/name-change-stream.ts\`, over the types openapi-typescript generates from this document.

A request function generated for this operation by most generators (orval, oazapfts, openapi-zod-client…) reads the whole body before it returns, and this body does not end: do not call it. Leave the operation out of the generated client by its tag \`${STREAM_TAG}\` (orval: \`input.filters: { tags: ['${STREAM_TAG}'], mode: 'exclude' }\`; oazapfts: \`--exclude ${STREAM_TAG} --allSchemas\`, which keeps the event's types).`;

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'options', 'head'] as const;

function operationsOf(document: OpenAPIObject): OperationObject[] {
  return Object.values(document.paths).flatMap((path) =>
    METHODS.map((method) => path[method]).filter((operation) => operation !== undefined),
  );
}

export function applyDocumentRules(document: OpenAPIObject): OpenAPIObject {
  for (const operation of operationsOf(document)) {
    withExplicitSecurity(operation);
    closeRequestBody(document, operation);
    guideStreamConsumers(operation);
  }
  referDirectly(document);
  return document;
}

/**
 * Every operation says how it is authenticated: public ones with `security: []`; the publish
 * bearer requirement also allows none, since it applies only when the operator sets
 * PUBLISH_TOKEN. The administration's never does: without ADMIN_TOKEN its routes are off.
 */
function withExplicitSecurity(operation: OperationObject): void {
  const security = operation.security ?? [];
  const optional = security.length > 0 && !security.some((s) => ADMIN_SCHEME in s);
  operation.security = optional ? [...security, {}] : security;
}

/**
 * Request bodies are closed (`additionalProperties: false`): the validation pipe refuses a
 * property its DTO does not list with a 400, so a validator generated from the document must
 * refuse it too, rather than pass a body the service then refuses.
 */
function closeRequestBody(document: OpenAPIObject, operation: OperationObject): void {
  const body = operation.requestBody;
  if (!body || '$ref' in body) return;
  const schemas = document.components?.schemas ?? {};
  const seen = new Set<SchemaObject>();
  const close = (schema: SchemaObject | ReferenceObject | undefined): void => {
    if (!schema) return;
    if ('$ref' in schema) {
      close(schemas[schema.$ref.replace('#/components/schemas/', '')]);
      return;
    }
    if (seen.has(schema)) return;
    seen.add(schema);
    if (schema.properties) {
      schema.additionalProperties = false;
      Object.values(schema.properties).forEach(close);
    }
    if (schema.items) close(schema.items);
    [schema.allOf, schema.anyOf, schema.oneOf].forEach((list) => list?.forEach(close));
  };
  Object.values(body.content).forEach((media) => close(media.schema));
}

/**
 * A Server-Sent Events operation (its 200 is `text/event-stream`) says how to consume it:
 * OpenAPI 3.0 cannot say "a stream of messages", and a generated request function treats the
 * answer as one body to read to its end. It is also tagged `stream`, after its controller's
 * tag, so that a generator can leave out exactly the streams; the first tag stays the
 * controller's, since generators group operations by it (0.1.0's clients have `listen` under
 * `events`).
 */
function guideStreamConsumers(operation: OperationObject): void {
  const ok = operation.responses['200'] as { content?: Record<string, unknown> } | undefined;
  if (!ok?.content?.['text/event-stream']) return;
  operation.tags = [...(operation.tags ?? []), STREAM_TAG];
  operation.description = [operation.description, STREAM_GUIDANCE].filter(Boolean).join('\n\n');
}

/**
 * A property that refers to another schema refers to it directly. @nestjs/swagger wraps the
 * reference in a one-element `allOf` to give it a description beside it, and swagger-codegen
 * makes an empty class of each wrapper (Python's `AllOf…`, Go's `Object`). OpenAPI 3.0 ignores
 * what stands beside a `$ref`, so the property's description goes into its schema's.
 */
function referDirectly(document: OpenAPIObject): void {
  for (const schema of Object.values(document.components?.schemas ?? {})) {
    if ('$ref' in schema || !schema.properties) continue;
    const notes: string[] = [];
    for (const [name, property] of Object.entries(schema.properties)) {
      if ('$ref' in property || property.allOf?.length !== 1 || !('$ref' in property.allOf[0])) {
        continue;
      }
      schema.properties[name] = { $ref: property.allOf[0].$ref };
      if (property.description) notes.push(`\`${name}\`: ${property.description}`);
    }
    if (notes.length > 0) {
      schema.description = [schema.description, ...notes].filter(Boolean).join('\n\n');
    }
  }
}

/** A copy of the document in which each operation has its first tag only (for Swagger UI). */
export function underFirstTagOnly(document: OpenAPIObject): OpenAPIObject {
  const copy = structuredClone(document);
  for (const operation of operationsOf(copy)) operation.tags = operation.tags?.slice(0, 1);
  return copy;
}
