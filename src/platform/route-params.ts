import type { Type } from '@nestjs/common';
// Nest's own metadata for a handler's parameter decorators: not part of its public API (the
// same import @nestjs/swagger makes to document parameters). route-params.spec.ts fails when
// it changes.
import { ROUTE_ARGS_METADATA } from '@nestjs/common/constants.js';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum.js';

/** The query a handler takes: a whole-query DTO (`@Query() dto`), or the keys it names. */
export type QueryParams = { dto: true } | { dto: false; names: ReadonlySet<string> };

/**
 * What a handler's `@Query()` parameters take, read from the metadata they leave: Nest has no
 * public way to ask which parameters a handler declares.
 */
export function queryParamsOf(controller: Type<unknown>, handler: string): QueryParams {
  const args = (Reflect.getMetadata(ROUTE_ARGS_METADATA, controller, handler) ?? {}) as Record<
    string,
    { data?: unknown }
  >;
  // Keys are "<paramtype>:<index>"; `data` is the key named in `@Query('key')`, if any.
  const queries = Object.entries(args)
    .filter(([key]) => Number(key.split(':')[0]) === Number(RouteParamtypes.QUERY))
    .map(([, arg]) => arg.data);
  return queries.some((data) => typeof data !== 'string')
    ? { dto: true }
    : { dto: false, names: new Set(queries as string[]) };
}
