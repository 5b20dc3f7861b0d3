import type { DocumentedErrorCases } from '../support/documented-errors.js';
import { http } from '../support/http.js';

export default {
  async provoke({ app, noDatabase }) {
    return [
      ['getLiveness 400', await http(`${app.url}/api/health/live?x=1`)],
      ['getReadiness 400', await http(`${app.url}/api/health/ready?x=1`)],
      ['getReadiness 503', await http(`${noDatabase.url}/api/health/ready`)],
    ];
  },
} satisfies DocumentedErrorCases;
