import { IsOptional, IsString, MinLength } from 'class-validator';
import { defineConfig, Variable } from '../config/config-section.js';

export class AdminVariables {
  @Variable(
    '16+ characters; turns on the administration routes (privacy, webhook endpoints), which require `Authorization: Bearer <token>`',
    { default: 'unset: administration off', secret: true },
  )
  @IsOptional()
  @IsString()
  @MinLength(16, { message: 'must be at least 16 characters long' })
  ADMIN_TOKEN?: string;
}

/** The administration: on when ADMIN_TOKEN is set. */
export const adminConfig = defineConfig({
  namespace: 'admin',
  description: 'The administration: on when ADMIN_TOKEN is set.',
  variables: AdminVariables,
  build: (env) => ({
    token: env.ADMIN_TOKEN,
  }),
});
