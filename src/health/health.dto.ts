import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import type { HealthCheckStatus } from '@nestjs/terminus';

export class HealthResponseDto {
  @ApiProperty({ enum: ['ok'], example: 'ok' })
  status: HealthCheckStatus;

  @ApiPropertyOptional({
    description: 'Each dependency checked, by name.',
    example: { database: { status: 'up' } },
    type: 'object',
    additionalProperties: true,
  })
  details?: Record<string, unknown>;
}
