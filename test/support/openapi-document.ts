import { readFileSync } from 'node:fs';

/** An operation of the committed document, as the specs read it. */
export interface DocumentedOperation {
  operationId: string;
  summary?: string;
  description?: string;
  tags?: string[];
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
