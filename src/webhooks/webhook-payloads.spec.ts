import { describe, expect, it } from '@jest/globals';
import { createHmac } from 'node:crypto';
import {
  discordRequest,
  escapeMarkdown,
  newSecret,
  sign,
  standardRequest,
} from './webhook-payloads.js';

const event = {
  id: '42',
  userId: '123',
  type: 'username' as const,
  name: 'old_name',
  changedAt: '2024-06-07T15:30:00.000Z',
};

describe('webhook payloads', () => {
  it('makes secrets of whsec_ and the base64 of at least 24 random bytes', () => {
    const secret = newSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(Buffer.from(secret.slice(6), 'base64').length).toBeGreaterThanOrEqual(24);
    expect(newSecret()).not.toBe(secret);
  });

  it("gives the Standard Webhooks specification's own example signature", () => {
    expect(
      sign(
        'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
        'msg_p5jXN8AQM9LWM0D4loKWxJek',
        1614265330,
        '{"test": 2432232314}',
      ),
    ).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  });

  it('signs the standard body with its id and timestamp', () => {
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw3y8Pu2XIY8o=';
    const now = new Date(1614265330 * 1000);
    const request = standardRequest(event, secret, now);
    expect(request.headers['webhook-id']).toBe('42');
    expect(request.headers['webhook-timestamp']).toBe('1614265330');
    expect(JSON.parse(request.body)).toEqual({
      type: 'name.changed',
      timestamp: '2021-02-25T15:02:10.000Z',
      data: event,
    });
    const key = Buffer.from('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw3y8Pu2XIY8o=', 'base64');
    const mac = createHmac('sha256', key).update(`42.1614265330.${request.body}`).digest('base64');
    expect(request.headers['webhook-signature']).toBe(`v1,${mac}`);
  });

  it('escapes Discord markdown in the name, and mentions nobody', () => {
    // Every ASCII punctuation character, and nothing else.
    const punctuation = '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~';
    expect(escapeMarkdown(`${punctuation} plain é 1`)).toBe(
      `${[...punctuation].map((c) => `\\${c}`).join('')} plain é 1`,
    );
    const body = JSON.parse(discordRequest({ ...event, type: 'displayname' }).body) as {
      content: string;
      allowed_mentions: unknown;
    };
    expect(body.content).toBe(
      'User 123 changed their display name. Previous display name: old\\_name',
    );
    expect(body.allowed_mentions).toEqual({ parse: [] });
  });
});
