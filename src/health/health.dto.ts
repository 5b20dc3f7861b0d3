import { ApiProperty, ApiPropertyOptional, getSchemaPath } from '@nestjs/swagger';
import type { HealthCheckStatus, HealthIndicatorResult } from '@nestjs/terminus';

export class HealthDependencyDto {
  @ApiProperty({ enum: ['up'], example: 'up', description: 'The dependency answered.' })
  status: 'up';
}

export class HealthResponseDto {
  @ApiProperty({ enum: ['ok'], example: 'ok' })
  status: HealthCheckStatus;

  // A map of one typed value (not `additionalProperties: true`): generators such as
  // swagger-codegen's Go write an undefined type for an untyped map.
  @ApiPropertyOptional({
    description: 'Each dependency checked, by name.',
    example: { database: { status: 'up' } },
    type: 'object',
    additionalProperties: { $ref: getSchemaPath(HealthDependencyDto) },
  })
  details?: HealthIndicatorResult;
}
