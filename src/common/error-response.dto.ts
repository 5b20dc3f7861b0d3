import { ApiProperty } from '@nestjs/swagger';

/** The one error body of the service, for every status. */
export class ErrorResponseDto {
  @ApiProperty({
    description: 'What went wrong, for a person to read.',
    example: 'Internal server error',
  })
  message: string;

  @ApiProperty({ description: 'The HTTP status code, repeated.', example: 500, type: 'integer' })
  code: number;
}
