import { Module } from '@nestjs/common';
import { Owns } from '../config/owns.decorator.js';
import { DatabaseModule } from '../database/index.js';
import { CursorSignerService } from './cursor-signer.service.js';
import { cursorsMigrations } from './migrations/index.js';

/**
 * The signing of the cursors every paged route hands out (the history, the search):
 * `CursorSignerService`, with a key its migration creates once in the database. A module that pages
 * imports it.
 */
@Owns({ migrations: cursorsMigrations })
@Module({
  imports: [DatabaseModule],
  providers: [CursorSignerService],
  exports: [CursorSignerService],
})
export class CursorsModule {}
