import { Body, Controller, Get, Headers, Param, Post, Query } from '@nestjs/common';
import { queryParamsOf } from './route-params.js';

class SomeQueryDto {
  limit?: number;
}

@Controller('things')
class ThingsController {
  @Get()
  listThings(@Query() _query: SomeQueryDto): void {}

  @Get(':id')
  getThing(
    @Param('id') _id: string,
    @Query('fields') _fields: string,
    @Headers('accept') _accept: string,
    @Query('expand') _expand: string,
  ): void {}

  @Post()
  createThing(@Body() _body: unknown, @Query('dryRun') _dryRun: string): void {}

  @Post(':id')
  replaceThing(@Param('id') _id: string, @Body() _body: unknown): void {}
}

// The canary of the one deep import of Nest's internals: what Nest's parameter decorators
// leave behind. When Nest changes it, this fails, and the guard that refuses unknown query
// keys would otherwise refuse every key of a DTO route, or none.
describe('queryParamsOf', () => {
  it('finds a whole-query DTO', () => {
    expect(queryParamsOf(ThingsController, 'listThings')).toEqual({ dto: true });
  });

  it('finds the keys a handler names, and no other kind of parameter', () => {
    expect(queryParamsOf(ThingsController, 'getThing')).toEqual({
      dto: false,
      names: new Set(['fields', 'expand']),
    });
    expect(queryParamsOf(ThingsController, 'createThing')).toEqual({
      dto: false,
      names: new Set(['dryRun']),
    });
  });

  it('finds no query on a handler that takes none', () => {
    expect(queryParamsOf(ThingsController, 'replaceThing')).toEqual({
      dto: false,
      names: new Set(),
    });
  });
});
