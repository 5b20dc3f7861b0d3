import { Controller, Get, Header } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrorResponses, UNKNOWN_QUERY_KEY } from '../common/api-error-responses.js';
import { MetricsService } from './metrics.service.js';

@ApiTags('operations')
@Controller('metrics')
export class MetricsController {
  constructor(private readonly metrics: MetricsService) {}

  @Get()
  @Header('Content-Type', 'text/plain; version=0.0.4; charset=utf-8')
  @Header('Cache-Control', 'no-cache')
  @ApiOperation({
    summary: 'Prometheus metrics (text exposition format)',
    description:
      "This instance's metrics, for Prometheus to scrape from each instance directly: listeners, events stored, broadcast and undelivered, publish and delivery latencies, history reads, privacy and retention counts, Postgres and Redis up, the detector's backlog, and the process defaults. The shipped proxy does not serve it.",
  })
  @ApiOkResponse({
    description: 'Metrics in the Prometheus text format.',
    content: { 'text/plain': { schema: { type: 'string' } } },
  })
  @ApiErrorResponses(UNKNOWN_QUERY_KEY)
  getMetrics(): Promise<string> {
    return this.metrics.metrics();
  }
}
