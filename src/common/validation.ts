import { ArgumentMetadata, BadRequestException, ValidationPipe } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { ValidateIf } from 'class-validator';

/**
 * An optional property of a body: absent, it is not checked; present, null included, it is.
 * (class-validator's IsOptional lets null through as well, for a field that takes no null.)
 */
export const IsOmittable = () => ValidateIf((_object, value) => value !== undefined);

/**
 * Keys that would reach an object's prototype if a transformer assigned them, and the names
 * of Object.prototype's members, which class-transformer skips without a word (so the
 * whitelist never sees `{"toString": 0}`): all refused as unknown properties.
 */
const FORBIDDEN_KEYS = ['prototype', ...Object.getOwnPropertyNames(Object.prototype)];

/**
 * class-transformer walks a body recursively: a few thousand levels of nesting (well within
 * the 16 KiB limit) overflow the stack. No DTO nests anywhere near this deep.
 */
export const MAX_BODY_DEPTH = 32;

/**
 * The global validation: DTOs are whitelisted (an unknown property is a 400), a body must
 * be a JSON object, and the message lists every failing constraint, each naming its field.
 */
class StrictValidationPipe extends ValidationPipe {
  /**
   * DTO classes that an empty query string satisfies: validation of `{}` always comes out the
   * same, and most reads send no query at all, so it runs once per class, not per request.
   */
  private readonly emptyQueryValid = new WeakSet<object>();

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    const emptyQuery =
      metadata.type === 'query' &&
      metadata.metatype !== undefined &&
      typeof value === 'object' &&
      value !== null &&
      Object.keys(value).length === 0;
    if (emptyQuery && this.emptyQueryValid.has(metadata.metatype)) {
      return plainToInstance(metadata.metatype, {});
    }
    const checked = metadata.type === 'body' || metadata.type === 'query';
    if (checked && metadata.metatype && this.toValidate(metadata)) {
      if (metadata.type === 'body') {
        if (typeof value !== 'object' || value === null || Array.isArray(value)) {
          throw new BadRequestException('Request body must be a JSON object');
        }
        if (nestsDeeperThan(value, MAX_BODY_DEPTH)) {
          throw new BadRequestException(
            `Request body must not nest more than ${MAX_BODY_DEPTH} levels deep`,
          );
        }
      }
      // A query string is parsed into an object too: `?toString=1` is as unknown a key as `?x=1`.
      const forbidden = FORBIDDEN_KEYS.filter((key) => Object.hasOwn(Object(value) as object, key));
      if (forbidden.length > 0) throw unknownKeys(forbidden);
    }
    const transformed: unknown = await super.transform(value, metadata);
    if (emptyQuery && this.toValidate(metadata)) this.emptyQueryValid.add(metadata.metatype);
    return transformed;
  }
}

/** The 400 of keys that a DTO does not list, as the pipe words it: for every other check. */
export function unknownKeys(keys: string[]): BadRequestException {
  return new BadRequestException(keys.map((key) => `property ${key} should not exist`).join('; '));
}

/** Whether objects and arrays nest more than `limit` levels, walked level by level (no recursion). */
function nestsDeeperThan(value: object, limit: number): boolean {
  let level: unknown[] = [value];
  for (let depth = 0; level.length > 0; depth++) {
    if (depth > limit) return true;
    const next: unknown[] = [];
    for (const item of level) {
      if (typeof item === 'object' && item !== null) {
        for (const child of Object.values(item)) next.push(child);
      }
    }
    level = next;
  }
  return false;
}

export function createValidationPipe(): ValidationPipe {
  return new StrictValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    forbidUnknownValues: true,
    transform: true,
    stopAtFirstError: true,
    validationError: { target: false, value: false },
    // No DTO nests another (ValidateNested): every error is a property's own constraints.
    exceptionFactory: (errors) =>
      new BadRequestException(
        errors.flatMap((error) => Object.values(error.constraints ?? {})).join('; '),
      ),
  });
}
