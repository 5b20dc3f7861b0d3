import { ApiProperty } from '@nestjs/swagger';

export class ErasureResponseDto {
  @ApiProperty({ example: '123456789012345678' })
  userId: string;

  @ApiProperty({
    description: 'How many history entries were deleted (0 when there were none).',
    type: 'integer',
    minimum: 0,
    example: 12,
  })
  deleted: number;

  @ApiProperty({ enum: [200], example: 200, type: 'integer' })
  code: 200;
}

export class OptOutResponseDto {
  @ApiProperty({ example: '123456789012345678' })
  userId: string;

  @ApiProperty({
    description: 'True while the user is opted out: nothing is recorded for them.',
    example: true,
  })
  optedOut: boolean;

  @ApiProperty({ enum: [200], example: 200, type: 'integer' })
  code: 200;
}
