import { IsOptional, IsString, MinLength } from 'class-validator';
import { defineConfig, Variable } from '../config/config-section.js';

export class PublishVariables {
  @Variable('when set (16+ characters), POST requires `Authorization: Bearer <token>` (else 401)', {
    default: 'unset',
    secret: true,
  })
  @IsOptional()
  @IsString()
  @MinLength(16, { message: 'must be at least 16 characters long' })
  PUBLISH_TOKEN?: string;
}

/** Who may publish: anyone, unless PUBLISH_TOKEN is set. */
export const publishConfig = defineConfig({
  namespace: 'publish',
  description: 'Who may publish: anyone, unless PUBLISH_TOKEN is set.',
  variables: PublishVariables,
  build: (env) => ({ token: env.PUBLISH_TOKEN }),
});
