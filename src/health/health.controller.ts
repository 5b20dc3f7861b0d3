import { Controller, Get, ServiceUnavailableException } from '@nestjs/common';
import { ApiExtraModels, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { type HealthCheckResult, HealthCheckService } from '@nestjs/terminus';
import { ApiErrorResponses, UNKNOWN_QUERY_KEY } from '../common/api-error-responses.js';
import { NoAccessLog } from '../common/route-traits.js';
import { DependencyHealth } from './dependency-health.js';
import { HealthDependencyDto, HealthResponseDto } from './health.dto.js';
import { HttpDrainService } from './http-drain.service.js';

@ApiTags('health')
@ApiExtraModels(HealthDependencyDto)
@Controller('health')
// Probed every few seconds by every orchestrator and load balancer: not worth a line each.
@NoAccessLog()
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly dependencies: DependencyHealth,
    private readonly drain: HttpDrainService,
  ) {}

  @Get('live')
  @ApiOperation({
    summary: 'Liveness: the process is up and serving HTTP',
    description:
      "200 while the process answers HTTP, whatever the state of the database and Redis: an orchestrator restarts the instance when it fails (the Docker image's HEALTHCHECK asks it). It is not logged.",
  })
  @ApiOkResponse({ type: HealthResponseDto, description: 'Alive.' })
  @ApiErrorResponses(UNKNOWN_QUERY_KEY)
  getLiveness(): HealthResponseDto {
    return { status: 'ok' };
  }

  @Get('ready')
  @ApiOperation({
    summary: 'Readiness: the database (and Redis, when configured) answer',
    description:
      '200 while the database, and Redis when configured, answer; 503 naming the ones that do not, and from SIGTERM on while the instance drains. For load balancers: send traffic elsewhere while it fails, without restarting the instance. It is not logged.',
  })
  @ApiOkResponse({ type: HealthResponseDto, description: 'Ready: every dependency answers.' })
  @ApiErrorResponses(UNKNOWN_QUERY_KEY, [503, 'Not ready: database unavailable'])
  async getReadiness(): Promise<HealthResponseDto> {
    let result: HealthCheckResult | undefined;
    let failure: unknown;
    if (!this.drain.isDraining) {
      result = await this.health
        .check(this.dependencies.checks)
        .catch((error: unknown) => ((failure = error), undefined));
    }
    // Asked again once the checks are done: a probe in flight when SIGTERM came says so too.
    if (this.drain.isDraining) throw new ServiceUnavailableException('Not ready: shutting down');
    if (!result) {
      throw new ServiceUnavailableException(`Not ready: ${downComponents(failure)} unavailable`);
    }
    return { status: result.status, details: result.details };
  }
}

/** The names of the failing checks in terminus's 503, e.g. "database, redis". */
function downComponents(error: unknown): string {
  const failing =
    error instanceof ServiceUnavailableException &&
    (error.getResponse() as { error?: object }).error;
  return Object.keys(failing || {}).join(', ') || 'a dependency';
}
