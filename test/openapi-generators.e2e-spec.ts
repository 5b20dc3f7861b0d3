import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { exampleOperations, openApiDocument } from './support/openapi-document.js';

// ajv-formats is CommonJS with a default export.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

const document = openApiDocument;
const operations = exampleOperations;

/** What generators other than openapi-typescript read in the document (docs/clients.md). */
describe('the OpenAPI document, as other generators read it', () => {
  it('describes every operation', () => {
    const undescribed = operations.filter(
      ({ operation }) => !operation.summary?.trim() || !operation.description?.trim(),
    );
    expect(undescribed.map(({ name }) => name)).toEqual([]);
  });

  it('closes every request body, so a validator generated from it refuses what the service refuses', () => {
    // A plain JSON Schema validator, as generated validators are: no closing of its own.
    const ajv = addFormats(new Ajv({ strict: false }));
    ajv.addSchema({ components: document.components }, 'openapi');
    const bodies = exampleOperations.flatMap(({ name, operation, body }) =>
      Object.values(operation.requestBody?.content ?? {}).map(({ schema }) => ({
        name,
        schema,
        /** A body the operation takes, with `fields` over it. */
        valid: (fields: Record<string, unknown> = {}) => ({ ...body, ...fields }),
      })),
    );
    expect(bodies.map(({ name }) => name)).toEqual(
      expect.arrayContaining(['POST /api/webhooks/prevnames']),
    );
    for (const { schema, valid } of bodies) {
      const validate = ajv.compile(
        JSON.parse(JSON.stringify(schema).replaceAll('"#/', '"openapi#/')) as object,
      );
      expect(validate(valid())).toBe(true);
      // The service answers these with 400 `property extra should not exist` (publish-validation).
      expect(validate(valid({ extra: 1 }))).toBe(false);
      expect(ajv.errorsText(validate.errors)).toBe('data must NOT have additional properties');
    }
  });

  it('says the bearer tokens are opaque strings, not JWTs', () => {
    const { securitySchemes } = document.components;
    expect(Object.keys(securitySchemes).sort()).toEqual(['admin', 'bearer', 'search']);
    for (const scheme of Object.values(securitySchemes)) {
      expect(scheme).toEqual({
        type: 'http',
        scheme: 'bearer',
        description: expect.stringContaining(
          'An opaque string the operator chooses (not a JWT)',
        ) as unknown,
      });
    }
  });

  it('tags the stream and says how to consume it, so no generated function waits for its end', () => {
    const streams = operations.filter(
      ({ operation }) => operation.responses['200']?.content?.['text/event-stream'],
    );
    expect(streams.map(({ name }) => name)).toEqual(['GET /api/webhooks/prevnames/listen']);
    const tagged = operations.filter(({ operation }) => operation.tags?.includes('stream'));
    expect(tagged.map(({ name }) => name)).toEqual(streams.map(({ name }) => name));
    const [{ operation }] = streams;
    // Its controller's tag first (generators group by it: 0.1.0's clients have `listen` under
    // `events`), then `stream`, so that excluding `stream` leaves out the stream alone.
    expect(operation.tags).toEqual(['events', 'stream']);
    expect(operation.description).toContain('**How to consume it.** Open it with an EventSource');
    expect(operation.description).toContain('`Last-Event-ID`');
    expect(operation.description).toContain('clients/typescript/name-change-stream.ts');
    expect(operation.description).toContain("input.filters: { tags: ['stream'], mode: 'exclude' }");
  });

  it('is OpenAPI 3.0 in the shapes that generators beyond TypeScript read without junk', () => {
    // swagger-codegen 3.0.x writes nothing for a 3.1 document (and exits 0).
    expect(document.openapi).toMatch(/^3\.0\.\d+$/);
    const wrapped: string[] = []; // swagger-codegen: an empty AllOf… class (Python), Object (Go)
    const nullInEnum: string[] = []; // openapi-zod-client: a z.enum with null does not compile
    const untypedMaps: string[] = []; // swagger-codegen's Go: an undefined ModelMap
    const visit = (node: unknown, where: string): void => {
      if (!node || typeof node !== 'object') return;
      const schema = node as Record<string, unknown>;
      const allOf = schema.allOf as unknown[] | undefined;
      if (allOf?.length === 1 && '$ref' in (allOf[0] as object)) wrapped.push(where);
      if (Array.isArray(schema.enum) && schema.enum.includes(null)) nullInEnum.push(where);
      const extra = schema.additionalProperties;
      if (extra === true || (extra && Object.keys(extra).length === 0)) untypedMaps.push(where);
      for (const [key, value] of Object.entries(schema)) visit(value, `${where}/${key}`);
    };
    visit(document.components, '#/components');
    visit(document.paths, '#/paths');
    expect({ wrapped, nullInEnum, untypedMaps }).toEqual({
      wrapped: [],
      nullInEnum: [],
      untypedMaps: [],
    });
  });
});
