import { Controller, Get, Header } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import { MetricsService } from './metrics.service.js';

@ApiTags('operations')
@Controller('metrics')
export class MetricsController {
  constructor(private readonly metrics: MetricsService) {}

  @Get()
  @Header('Content-Type', 'text/plain; version=0.0.4; charset=utf-8')
  @Header('Cache-Control', 'no-cache')
  @ApiOperation({ summary: 'Prometheus metrics (text exposition format)' })
  @ApiProduces('text/plain')
  @ApiOkResponse({
    description: 'Metrics in the Prometheus text format.',
    content: { 'text/plain': { schema: { type: 'string' } } },
  })
  getMetrics(): Promise<string> {
    return this.metrics.metrics();
  }
}
