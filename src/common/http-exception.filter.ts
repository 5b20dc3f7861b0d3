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

/**
 * The error contract: every error of any status leaves as `{message, code}` JSON. Framework
 * shapes (`statusCode`, `error`) and stack traces never reach a client; a 5xx is logged with
 * its request id.
 */
@Catch()
export class HttpExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('HttpExceptionFilter');

  catch(exception: unknown, host: ArgumentsHost): void {
    const ctx = host.switchToHttp();
    const response = ctx.getResponse<Response>();
    const request = ctx.getRequest<Request & { id?: unknown }>();
    const body = toErrorBody(exception);
    if (exception instanceof ExpectedServerErrorException) {
      this.logger.warn(`${request.method} ${request.originalUrl}: ${exception.message}`);
    } else if (body.code >= 500) {
      this.logger.error(
        { err: exception, reqId: request.id, method: request.method, url: request.originalUrl },
        `${request.method} ${request.originalUrl} failed: ${describe(exception)}`,
      );
    }
    if (response.headersSent) {
      // A stream already under way cannot change its status: end it.
      response.end();
      return;
    }
    response.status(body.code).json(body);
  }
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
  if (code >= 500 && code !== (HttpStatus.SERVICE_UNAVAILABLE as number)) {
    // An HttpException of 5xx may carry an internal detail: only say what the contract says.
    return typeof response === 'string'
      ? response
      : (stringMessage(response) ?? INTERNAL_ERROR_MESSAGE);
  }
  if (typeof response === 'string') return response;
  return stringMessage(response) ?? fallback;
}

function stringMessage(response: object): string | undefined {
  const message = (response as { message?: unknown }).message;
  if (typeof message === 'string') return message;
  if (Array.isArray(message)) return message.join('; ');
  return undefined;
}

function statusOf(exception: unknown): number | undefined {
  if (typeof exception !== 'object' || exception === null) return undefined;
  const { status, statusCode } = exception as { status?: unknown; statusCode?: unknown };
  const value = typeof status === 'number' ? status : statusCode;
  return typeof value === 'number' ? value : undefined;
}

function describe(exception: unknown): string {
  return exception instanceof Error ? exception.message : String(exception);
}
