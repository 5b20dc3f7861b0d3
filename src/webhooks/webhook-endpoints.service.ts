import { Injectable, NotFoundException } from '@nestjs/common';
import { InjectConfig, type ConfigOf } from '../config/config-section.js';
import { NameEventLogRepository } from '../name-events/index.js';
import type {
  CreatedWebhookEndpointDto,
  CreateWebhookEndpointDto,
  DeletedWebhookEndpointDto,
  WebhookEndpointDto,
  WebhookEndpointListDto,
  WebhookEndpointResponseDto,
  WebhookEndpointStatusDto,
} from './webhook-endpoints.dto.js';
import {
  positionOf,
  WebhookEndpointsRepository,
  type EndpointRow,
  type EndpointStatusRow,
} from './webhook-endpoints.repository.js';
import { newSecret } from './webhook-payloads.js';
import { WebhookSendersService } from './webhook-senders.service.js';
import { vetTarget } from './webhook-targets.js';
import { webhooksConfig } from './webhooks.config.js';
import { WebhooksMetrics } from './webhooks.metrics.js';

/** An id the table could hold: anything else is an unknown endpoint. */
const ENDPOINT_ID = /^[1-9]\d{0,17}$/;

/**
 * The endpoint routes: registration (the target vetted), reads, deletion; and each endpoint's
 * pending events in the metrics, as the list reads them.
 */
@Injectable()
export class WebhookEndpointsService {
  constructor(
    private readonly endpoints: WebhookEndpointsRepository,
    private readonly senders: WebhookSendersService,
    private readonly log: NameEventLogRepository,
    @InjectConfig(webhooksConfig) private readonly config: ConfigOf<typeof webhooksConfig>,
    metrics: WebhooksMetrics,
  ) {
    metrics.onCollect(async () => {
      const { endpoints } = await this.listEndpoints();
      metrics.pending.reset();
      for (const { id, pending } of endpoints) metrics.pending.set({ endpoint: id }, pending);
    });
  }

  async createEndpoint(body: CreateWebhookEndpointDto): Promise<CreatedWebhookEndpointDto> {
    const url = new URL(body.url);
    // A target refused is a 400 (TargetRefusedError).
    await vetTarget(url, this.config.allowPrivateTargets);
    const format = body.format ?? 'standard';
    const secret = format === 'standard' ? newSecret() : null;
    const row = await this.endpoints.create({
      url: url.href,
      format,
      userId: body.userId ?? null,
      type: body.type ?? null,
      description: body.description ?? null,
      secret,
      // It gets the events stored after this one: those commit later, with greater ids.
      deliveredThrough: await this.log.latestId(),
    });
    this.senders.add(row.id);
    return { ...endpointOf(row), secret, code: 201 };
  }

  async listEndpoints(): Promise<WebhookEndpointListDto> {
    const rows = await this.endpoints.findAll();
    const pending = await this.log.countAfter(rows.map(positionOf));
    return { endpoints: rows.map((row, i) => statusOf(row, pending[i])), code: 200 };
  }

  async getEndpoint(id: string): Promise<WebhookEndpointResponseDto> {
    const row = ENDPOINT_ID.test(id) ? await this.endpoints.find(id) : undefined;
    if (!row) throw notFound(id);
    const [pending] = await this.log.countAfter([positionOf(row)]);
    return { ...statusOf(row, pending), code: 200 };
  }

  async deleteEndpoint(id: string): Promise<DeletedWebhookEndpointDto> {
    if (!ENDPOINT_ID.test(id) || !(await this.endpoints.delete(id))) throw notFound(id);
    // Not awaited: an attempt under way may finish, and none starts after this answer.
    void this.senders.remove(id);
    return { id, deleted: true, code: 200 };
  }
}

function notFound(id: string): NotFoundException {
  return new NotFoundException(`No webhook endpoint ${id}`);
}

function endpointOf(row: EndpointRow): WebhookEndpointDto {
  const { id, url, format, userId, type, description, createdAt } = row;
  return { id, url, format, userId, type, description, createdAt: createdAt.toISOString() };
}

function statusOf(row: EndpointStatusRow, pending: number): WebhookEndpointStatusDto {
  return {
    ...endpointOf(row),
    lastDeliveredEventId: row.lastDeliveredEventId,
    pending,
    failingSince: row.failingSince?.toISOString() ?? null,
  };
}
