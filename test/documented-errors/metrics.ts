import type { DocumentedErrorCases } from '../support/documented-errors.js';
import { http } from '../support/http.js';

export default {
  async provoke({ app }) {
    return [['getMetrics 400', await http(`${app.url}/api/metrics?x=1`)]];
  },
} satisfies DocumentedErrorCases;
