import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * A secret that requests present as `Authorization: Bearer <token>`. Both sides are hashed
 * first, so the comparison takes the same time whatever the length of the guess.
 */
export class BearerToken {
  private readonly expected: Buffer;

  constructor(token: string) {
    this.expected = digest(token);
  }

  /** Whether an `Authorization` header carries this token. */
  matches(authorization: string | undefined): boolean {
    const match = /^Bearer (.+)$/i.exec(authorization ?? '');
    return match !== null && timingSafeEqual(digest(match[1]), this.expected);
  }
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}
