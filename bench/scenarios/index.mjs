import { capacity } from './capacity.mjs';
import { detector } from './detector.mjs';
import { fanout1k, fanout10k, fanoutPaced } from './fanout.mjs';
import { history } from './history.mjs';
import { hostileMemory } from './hostile-memory.mjs';
import { idleMemory } from './idle-memory.mjs';
import { publish } from './publish.mjs';
import { search } from './search.mjs';
import { soak } from './soak.mjs';
import { twoInstances } from './two-instances.mjs';
import { webhooks } from './webhooks.mjs';

/**
 * The scenarios of `npm run bench`, in run order. Idle memory goes first: with --quick the
 * servers are shared by the scenarios, and only a fresh one gives a clean memory baseline.
 */
export const SCENARIOS = [
  idleMemory,
  fanout1k,
  fanout10k,
  fanoutPaced,
  capacity,
  twoInstances,
  publish,
  history,
  search,
  webhooks,
  detector,
  hostileMemory,
];
/** Only with --soak. */
export const SOAK = soak;
