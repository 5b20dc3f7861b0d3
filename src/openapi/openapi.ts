import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, type OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import type { NextFunction, Request, Response } from 'express';
import { readFileSync } from 'node:fs';
import { ErrorResponseDto } from '../common/error-response.dto.js';
import { unknownKeys } from '../common/validation.js';
import { OWNED_BY_MODULES } from '../config/configuration.module.js';
import type { Owned } from '../config/owns.decorator.js';
import {
  ADMIN_SCHEME,
  applyDocumentRules,
  STREAM_TAG,
  STREAM_TAG_DESCRIPTION,
  underFirstTagOnly,
} from './document-rules.js';

const { version } = JSON.parse(
  readFileSync(new URL('../../package.json', import.meta.url), 'utf8'),
) as { version: string };

const DESCRIPTION = `Keeps the history of Discord users' previous usernames and display names, and streams every name change live (Server-Sent Events).

**\`name\`** is always the name recorded in the history: the name the user had *before* the change.

**Errors.** Every error, of any status, is \`{"message": string, "code": <status>}\` as JSON; the message names the field(s) at fault. Every operation also refuses a query key it does not list and a body property its schema does not list (400: request body schemas are closed, \`additionalProperties: false\`), a body that is not JSON or declares a charset other than utf-8 (415), and, before any operation is chosen: a request line and headers over 16 KiB or 2000 header fields (431), a request that does not arrive in time (408), an \`Expect\` other than \`100-continue\` (417), a well-formed request line naming HTTP/2 or later (505), and any other malformed request, HTTP/0.9 and a garbled version included (400).

**Authentication.** None by default. When the operator sets \`PUBLISH_TOKEN\`, publishing requires \`Authorization: Bearer <token>\`. Tokens are opaque strings the operator chooses, not JWTs.

**Privacy administration.** Off unless the operator sets \`ADMIN_TOKEN\`: then erasure and opt-out routes require \`Authorization: Bearer <ADMIN_TOKEN>\`; without it they answer 404 like unknown routes.`;

/** Bearer tokens here are secrets the operator chooses: no `bearerFormat`, they are no JWTs. */
const TOKEN_DESCRIPTION =
  'An opaque string the operator chooses (not a JWT), sent as `Authorization: Bearer <token>`';

/** The OpenAPI document of the application. Operation ids are the handler names. */
export function buildOpenApiDocument(app: INestApplication): OpenAPIObject {
  const builder = new DocumentBuilder()
    .setTitle('Name history service')
    .setDescription(DESCRIPTION)
    .setVersion(version)
    .setLicense('Proprietary', 'https://example.com/license')
    .addServer('/', 'This instance');
  // The operator's tokens (see the auth folder's TOKEN_RULES).
  const owned = app.get<Required<Owned>>(OWNED_BY_MODULES);
  const schemes = [
    { name: 'bearer', description: "the operator's PUBLISH_TOKEN. Needed only when it is set." },
    { name: ADMIN_SCHEME, description: "the operator's ADMIN_TOKEN (16 characters or more)." },
    {
      name: 'search',
      description:
        "the operator's SEARCH_TOKEN (16 characters or more); ADMIN_TOKEN is accepted too.",
    },
  ];
  for (const { name, description } of schemes) {
    builder.addSecurity(name, {
      type: 'http',
      scheme: 'bearer',
      description: `${TOKEN_DESCRIPTION}: ${description}`,
    });
  }
  const config = builder.build();
  // Each module names its own tags (`@Owns`), in the order of app.module.ts; every stream
  // also goes under a tag of its own (see document-rules.ts).
  config.tags = [
    ...owned.apiTags.map((tag) => ({ ...tag })),
    { name: STREAM_TAG, description: STREAM_TAG_DESCRIPTION },
  ];
  const document = SwaggerModule.createDocument(app, config, {
    operationIdFactory: (_controllerKey, methodKey) => methodKey,
    extraModels: [ErrorResponseDto],
  });
  return applyDocumentRules(document);
}

/** The documentation's own routes: Swagger UI, its files, and the document. */
const DOCS_PATHS = /^\/api\/docs(?:-json|-yaml)?(?:\/|$)/;

/** Serves Swagger UI at /api/docs and the document at /api/docs-json. */
export function serveOpenApi(app: INestApplication): void {
  // They take no query, and like every route refuse one rather than ignore it.
  app.use((req: Request, res: Response, next: NextFunction) => {
    const keys = DOCS_PATHS.test(req.path) ? Object.keys(req.query) : [];
    if (keys.length === 0) {
      next();
      return;
    }
    res.status(400).json({ message: unknownKeys(keys).message, code: 400 });
  });
  // The published document, as generated clients read it: built once, at the first request.
  let document: OpenAPIObject | undefined;
  const published = () => (document ??= buildOpenApiDocument(app));
  SwaggerModule.setup('api/docs', app, published, {
    ui: false,
    jsonDocumentUrl: 'api/docs-json',
    yamlDocumentUrl: 'api/docs-yaml',
    useGlobalPrefix: false,
  });
  // Swagger UI lists an operation under each of its tags: it gets a copy in which each
  // operation keeps its first tag only, so the stream (`events`, `stream`) shows once.
  SwaggerModule.setup('api/docs', app, () => underFirstTagOnly(published()), {
    raw: false,
    useGlobalPrefix: false,
  });
}
