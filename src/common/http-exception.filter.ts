import {
  ArgumentsHost,
  Catch,
  ExceptionFilter,
  HttpException,
  HttpStatus,
  InternalServerErrorException,
  Logger,
} from '@nestjs/common';
import type { Request, Response } from 'express';
import type { ErrorResponseDto } from './error-response.dto.js';
import { pathOf, routeOf } from './logger.js';

export const INTERNAL_ERROR_MESSAGE = 'Internal server error';
export const BODY_TOO_LARGE_MESSAGE = 'Request body exceeds the 16 KiB limit';
export const UNSUPPORTED_MEDIA_TYPE_MESSAGE = 'Content-Type must be application/json';
export const UNSUPPORTED_CHARSET_MESSAGE = 'Unsupported charset: request bodies must be UTF-8 JSON';

/** Messages for the errors Express and body-parser raise before a controller runs. */
const PARSER_MESSAGES: Record<string, string> = {
  'entity.parse.failed': 'Request body is not valid JSON',
  'entity.too.large': BODY_TOO_LARGE_MESSAGE,
  'encoding.unsupported': 'Unsupported Content-Encoding',
  'charset.unsupported': UNSUPPORTED_CHARSET_MESSAGE,
  'request.aborted': 'Request aborted',
  'request.size.invalid': 'Request body size did not match Content-Length',
};

/**
 * A 500 that the contract prescribes for a known condition rather than a fault (e.g. "no
 * active listeners"): answered like any 500, but logged as a warning, without a stack, so
 * that it does not page whoever watches the error log.
 */
export class ExpectedServerErrorException extends InternalServerErrorException {}

/** Query values shorter than this are not looked for in a logged error (see `loggedError`). */
const REDACTED_MIN_LENGTH = 3;
const REDACTED = '[redacted]';

/**
 * A 429 or 503 that says when to come back: the filter sends its `Retry-After` (seconds) with
 * the error body.
 */
export class RetryLaterException extends HttpException {
  constructor(
    message: string,
    status: HttpStatus.TOO_MANY_REQUESTS | HttpStatus.SERVICE_UNAVAILABLE,
    readonly retryAfterSeconds: number,
  ) {
    super(message, status);
  }
}

/**
 * The error contract: every error of any status leaves as `{message, code}` JSON. Framework
 * shapes (`statusCode`, `error`) and stack traces never reach a client; a 5xx is logged with
 * its request id, its route's template and its path, never its query string (a search's
 * name and cursor are in it), nor a query value inside the error's message.
 */
@Catch()
export class HttpExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('HttpExceptionFilter');

  catch(exception: unknown, host: ArgumentsHost): void {
    const ctx = host.switchToHttp();
    const response = ctx.getResponse<Response>();
    const request = ctx.getRequest<Request & { id?: unknown }>();
    const body = toErrorBody(exception);
    if (body.code >= 500) this.log(exception, request);
    if (response.headersSent) {
      // A stream already under way cannot change its status: end it.
      response.end();
      return;
    }
    if (exception instanceof RetryLaterException) {
      response.setHeader('Retry-After', String(exception.retryAfterSeconds));
    }
    response.status(body.code).json(body);
  }

  /** The line of a 5xx: a warning without a stack for an expected one, else an error. */
  private log(exception: unknown, request: Request & { id?: unknown }): void {
    const route = routeOf(request);
    const url = pathOf(request);
    const fields = { reqId: request.id, method: request.method, route, url };
    const target = `${request.method} ${route ?? url}`;
    if (exception instanceof ExpectedServerErrorException) {
      this.logger.warn(fields, `${target}: ${exception.message}`);
      return;
    }
    const err = loggedError(exception, request);
    this.logger.error({ err, ...fields }, `${target} failed: ${err.message}`);
  }
}

/** What the error line logs of an exception (see `loggedError`). */
export interface LoggedError {
  /** Its class (`StorageUnavailableError`), as pino names an error's. */
  readonly name: string;
  message: string;
  stack?: string;
  code?: string | number;
}

/**
 * What the error line logs of an exception: its type, message, stack (and `code`, a SQLSTATE
 * or a system error's), with every query value of the request (of 3 characters or more,
 * ignoring case) taken out of the message. Nothing else of it (a `cause`, an exception's
 * response), which may hold what the request sent. The sources keep request input out of
 * their messages themselves (StorageUnavailableError drops the values Postgres quotes): this
 * is for those that do not.
 */
export function loggedError(
  exception: unknown,
  request: Pick<Request, 'query' | 'originalUrl' | 'url'>,
): LoggedError {
  const redact = redactor(queryValuesOf(request));
  const error = exception instanceof Error ? exception : undefined;
  const name = error?.name ?? typeof exception;
  const message = redact(error ? error.message : String(exception));
  // No prototype, and the name not enumerable: pino's error serializer then takes the type
  // from the name and copies the rest as it is.
  const logged = Object.create(null) as LoggedError;
  Object.defineProperty(logged, 'name', { value: name, enumerable: false });
  logged.message = message;
  if (error?.stack !== undefined) {
    // The frames are the code's; the head repeats the message, when it is still the same.
    const head = error.message ? `${error.name}: ${error.message}` : error.name;
    logged.stack = error.stack.startsWith(head)
      ? `${head.slice(0, head.length - error.message.length)}${message}${error.stack.slice(head.length)}`
      : redact(error.stack);
  }
  const { code } = (error ?? {}) as { code?: unknown };
  if (typeof code === 'string' || typeof code === 'number') logged.code = code;
  return logged;
}

/** The request's query values: as parsed, and as sent (percent-encoded). */
function queryValuesOf(request: Pick<Request, 'query' | 'originalUrl' | 'url'>): string[] {
  const parsed = Object.values((request.query ?? {}) as Record<string, unknown>).flat();
  const target = request.originalUrl ?? request.url ?? '';
  const query = target.indexOf('?');
  const sent = query === -1 ? [] : target.slice(query + 1).split('&');
  return [
    ...parsed.filter((value) => typeof value === 'string'),
    // A pair without `=` is all value.
    ...sent.map((pair) => pair.slice(pair.indexOf('=') + 1)),
  ];
}

function redactor(values: string[]): (text: string) => string {
  const wanted = [...new Set(values.filter((v) => v.length >= REDACTED_MIN_LENGTH))]
    // The longest first, so that a value inside another does not leave the rest of it.
    .sort((a, b) => b.length - a.length)
    .map((v) => v.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  if (wanted.length === 0) return (text) => text;
  let pattern: RegExp;
  try {
    pattern = new RegExp(wanted.join('|'), 'giu');
  } catch {
    // Not a value that can be looked for: nothing of the message is kept, rather than it.
    return () => REDACTED;
  }
  return (text) => text.replace(pattern, REDACTED);
}

export function toErrorBody(exception: unknown): ErrorResponseDto {
  if (exception instanceof HttpException) {
    const code = exception.getStatus();
    const message =
      parserMessage(exception.cause) ?? messageOf(exception.getResponse(), exception.message, code);
    return { message, code };
  }
  const status = statusOf(exception);
  if (status !== undefined && status >= 400 && status < 500) {
    return { message: parserMessage(exception) ?? (exception as Error).message, code: status };
  }
  return { message: INTERNAL_ERROR_MESSAGE, code: HttpStatus.INTERNAL_SERVER_ERROR };
}

/** Express and body-parser errors (Nest wraps them as the cause of an HttpException). */
function parserMessage(error: unknown): string | undefined {
  if (error instanceof URIError) return 'Malformed URL: invalid percent-encoding';
  const type = (error as { type?: unknown } | undefined)?.type;
  return typeof type === 'string' ? PARSER_MESSAGES[type] : undefined;
}

function messageOf(response: string | object, fallback: string, code: number): string {
  if (typeof response === 'string') return response;
  const { message } = response as { message?: unknown };
  if (typeof message === 'string') return message;
  if (Array.isArray(message)) return message.join('; ');
  // An HttpException of 5xx may carry an internal detail: only say what the contract says.
  const hidden = code >= 500 && code !== (HttpStatus.SERVICE_UNAVAILABLE as number);
  return hidden ? INTERNAL_ERROR_MESSAGE : fallback;
}

function statusOf(exception: unknown): number | undefined {
  const { status, statusCode } = (exception ?? {}) as { status?: unknown; statusCode?: unknown };
  const value = typeof status === 'number' ? status : statusCode;
  return typeof value === 'number' ? value : undefined;
}
