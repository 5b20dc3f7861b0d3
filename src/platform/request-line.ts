import type { NextFunction, Request, Response } from 'express';
import { HOST_REQUIRED_MESSAGE, sendJson, VERSION_NOT_SUPPORTED_MESSAGE } from './http-answers.js';

/**
 * First in the chain: refuses HTTP versions other than 1.x (Node's parser lets 0.9 and 2.0
 * through), and requires Host on HTTP/1.1 (Node's own check is off, see ExpressHttpAdapter,
 * because its answer has no body).
 */
export function checkRequestLine(req: Request, res: Response, next: NextFunction): void {
  if (req.httpVersionMajor !== 1) {
    sendJson(res, 505, VERSION_NOT_SUPPORTED_MESSAGE, true);
    return;
  }
  if (req.httpVersionMinor === 1 && req.headers.host === undefined) {
    sendJson(res, 400, HOST_REQUIRED_MESSAGE, true);
    return;
  }
  next();
}
