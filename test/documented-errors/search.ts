import { ADMIN, type DocumentedErrorCases } from '../support/documented-errors.js';
import type { TestApp } from '../support/app.js';
import { http } from '../support/http.js';

export default {
  async provoke({ noAdmin, noDatabase, start }) {
    // On with ADMIN_TOKEN; 2 searches a window, the 400 counted.
    const app = await start({ SEARCH_RATE_LIMIT: '2' });
    const search = (base: TestApp, query: string, headers: Record<string, string> = ADMIN) =>
      http(`${base.url}/api/prevnames${query}`, { headers });
    const answers: [string, Awaited<ReturnType<typeof http>>][] = [
      ['searchPreviousNames 401', await search(app, '?name=old_name', {})],
      ['searchPreviousNames 400', await search(app, '')],
    ];
    const allowed = await search(app, '?name=old_name');
    if (allowed.status !== 200) throw new Error(`the second search answered ${allowed.status}`);
    answers.push(
      ['searchPreviousNames 429', await search(app, '?name=old_name')],
      ['searchPreviousNames 404', await search(noAdmin, '?name=old_name')],
      ['searchPreviousNames 500', await search(noDatabase, '?name=old_name')],
    );
    return answers;
  },
} satisfies DocumentedErrorCases;
