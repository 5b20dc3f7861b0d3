import { ApiProperty } from '@nestjs/swagger';

/** The publish body: a name change event, defined with its rules beside this file. */
export { NameChangeEventDto } from './name-change-event.dto.js';

export class PublishResponseDto {
  @ApiProperty({ enum: [true], example: true })
  success: true;
}
