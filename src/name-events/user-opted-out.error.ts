/** A publish for a user who has opted out: nothing was stored or broadcast. */
export class UserOptedOutError extends Error {
  override readonly name = 'UserOptedOutError';

  constructor(readonly userId: string) {
    super('The user has opted out of name recording');
  }
}
