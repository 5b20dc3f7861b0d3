import {
  applyDecorators,
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  Param,
  Post,
} from '@nestjs/common';
import {
  ApiCreatedResponse,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiTags,
} from '@nestjs/swagger';
import { ApiOffResponse, RequireToken } from '../auth/index.js';
import { ApiErrorResponses, UNKNOWN_QUERY_KEY } from '../common/api-error-responses.js';
import {
  CreatedWebhookEndpointDto,
  CreateWebhookEndpointDto,
  DeletedWebhookEndpointDto,
  WebhookEndpointListDto,
  WebhookEndpointResponseDto,
} from './webhook-endpoints.dto.js';
import { WebhookEndpointsService } from './webhook-endpoints.service.js';
import { PRIVATE_TARGET_MESSAGE } from './webhook-targets.js';

/** What every endpoint route may answer besides its success; `unknownId`: a route of one. */
function ApiAdministration(method: 'GET' | 'POST' | 'DELETE', unknownId = false) {
  return applyDecorators(
    unknownId
      ? ApiOffResponse(
          'admin',
          'No webhook endpoint 42',
          'No such endpoint (never created, or deleted)',
        )
      : ApiOffResponse('admin', `Cannot ${method} /api/webhook-endpoints`),
    ApiErrorResponses(method === 'POST' ? [400, PRIVATE_TARGET_MESSAGE] : UNKNOWN_QUERY_KEY, 500),
  );
}

const ApiEndpointIdParam = () =>
  ApiParam({
    name: 'id',
    description: "The endpoint's id.",
    schema: { type: 'string', example: '1' },
  });

@ApiTags('webhooks')
@Controller('webhook-endpoints')
@RequireToken('admin')
export class WebhookEndpointsController {
  constructor(private readonly webhooks: WebhookEndpointsService) {}

  @Post()
  @HttpCode(201)
  @ApiOperation({
    summary: 'Register a webhook endpoint',
    description:
      'Every event stored from now on (by POST or the detector) that matches the filters is POSTed to `url`, at least once, in increasing id order (the next waits for the previous one\'s 2xx), from one instance at a time; retried with back-off (min(2^(n−1) s, 10 min) ±20 %, or the receiver\'s Retry-After) for as long as the endpoint exists; 10 s per attempt; never following redirects; stopped by a 410 Gone. Events erased before delivery are not sent. `standard`: Standard Webhooks (`webhook-id` is the event id, `webhook-signature` signed with `secret`), body `{"type":"name.changed","timestamp","data":{id,userId,type,name,changedAt}}`. `discord`: a Discord execute-webhook message, markdown escaped, no mentions. Administration: needs ADMIN_TOKEN.',
  })
  @ApiCreatedResponse({ type: CreatedWebhookEndpointDto, description: 'Registered.' })
  @ApiAdministration('POST')
  createEndpoint(@Body() body: CreateWebhookEndpointDto): Promise<CreatedWebhookEndpointDto> {
    return this.webhooks.createEndpoint(body);
  }

  @Get()
  @ApiOperation({
    summary: 'List the webhook endpoints',
    description:
      'Every endpoint, oldest first, with how its deliveries stand. Administration: needs ADMIN_TOKEN.',
  })
  @ApiOkResponse({ type: WebhookEndpointListDto, description: 'The endpoints.' })
  @ApiAdministration('GET')
  listEndpoints(): Promise<WebhookEndpointListDto> {
    return this.webhooks.listEndpoints();
  }

  @Get(':id')
  @ApiOperation({
    summary: 'A webhook endpoint',
    description:
      'The endpoint (its secret aside) and how its deliveries stand. Administration: needs ADMIN_TOKEN.',
  })
  @ApiOkResponse({ type: WebhookEndpointResponseDto, description: 'The endpoint.' })
  @ApiEndpointIdParam()
  @ApiAdministration('GET', true)
  getEndpoint(@Param('id') id: string): Promise<WebhookEndpointResponseDto> {
    return this.webhooks.getEndpoint(id);
  }

  @Delete(':id')
  @ApiOperation({
    summary: 'Delete a webhook endpoint',
    description:
      'Nothing more is sent to it once this is answered (an attempt under way may finish); its undelivered events are dropped. Administration: needs ADMIN_TOKEN.',
  })
  @ApiOkResponse({ type: DeletedWebhookEndpointDto, description: 'Deleted.' })
  @ApiEndpointIdParam()
  @ApiAdministration('DELETE', true)
  deleteEndpoint(@Param('id') id: string): Promise<DeletedWebhookEndpointDto> {
    return this.webhooks.deleteEndpoint(id);
  }
}
