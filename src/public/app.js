/* global document, history, location, EventSource, URLSearchParams */
// The live page: the browser's own EventSource on the stream, and one fetch per history
// lookup. Every string that comes from the service enters the page as a Text node
// (textContent, or append() of a string), never as HTML.

const STREAM_PATH = 'api/webhooks/prevnames/listen';
const historyPath = (userId) => `api/users/${encodeURIComponent(userId)}/prevnames`;

/** Rows kept in the feed; older ones are dropped from the bottom. */
const MAX_FEED_ROWS = 200;
/** Reconnecting for longer than this is shown as down (the browser keeps trying). */
const DOWN_AFTER_MS = 10_000;
/** When the browser gives up (an HTTP error instead of a stream), the page retries itself. */
const RETRY_MIN_MS = 1_000;
const RETRY_MAX_MS = 30_000;

const TYPE_LABELS = { username: 'Username', displayname: 'Display name' };
const timeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'long' });

const $ = (id) => document.getElementById(id);
const ui = {
  connection: $('connection'),
  connectionText: $('connection-text'),
  retry: $('retry'),
  filterForm: $('filter-form'),
  filterInput: $('filter-user'),
  filterClear: $('filter-clear'),
  feedScope: $('feed-scope'),
  feedEmpty: $('feed-empty'),
  feed: $('feed'),
  historyHeading: $('history-heading'),
  historyForm: $('history-form'),
  historyInput: $('history-user'),
  historyResult: $('history-result'),
};

/** Creates an element; string children become Text nodes, so nothing is parsed as HTML. */
function h(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (name === 'class') node.className = value;
    else node.setAttribute(name, value);
  }
  node.append(...children);
  return node;
}

function timeElement(iso) {
  const date = new Date(iso);
  const text = Number.isNaN(date.getTime()) ? iso : timeFormat.format(date);
  const node = h('time', { datetime: iso, title: iso });
  node.textContent = text;
  return node;
}

function typeLabel(type) {
  return Object.hasOwn(TYPE_LABELS, type) ? TYPE_LABELS[type] : type;
}

function isNameEvent(value) {
  return (
    typeof value === 'object' &&
    value !== null &&
    ['userId', 'type', 'name', 'changedAt'].every((key) => typeof value[key] === 'string')
  );
}

// ---------------------------------------------------------------------------------------
// The live feed

const feed = {
  /** Event id → its row: what the page shows, so a repeat or a replayed event is dropped. */
  rows: new Map(),
  /** The highest id received: where a stream the page reopens itself resumes. */
  lastId: undefined,
  /** The user the feed is filtered to, or undefined for everyone. */
  userId: undefined,
};

function showEvent(id, event) {
  if (id !== '' && feed.rows.has(id)) return;
  const row = eventRow(id, event);
  // Newest (highest id) on top: live events arrive in id order, only a repeat can be older.
  const key = id === '' ? undefined : BigInt(id);
  const next = [...ui.feed.children].find(
    (other) => key === undefined || other.dataset.id === '' || BigInt(other.dataset.id) < key,
  );
  ui.feed.insertBefore(row, next ?? null);
  if (id !== '') feed.rows.set(id, row);
  while (ui.feed.children.length > MAX_FEED_ROWS) {
    const last = ui.feed.lastElementChild;
    feed.rows.delete(last.dataset.id);
    last.remove();
  }
  ui.feedEmpty.hidden = true;
}

function eventRow(id, event) {
  const lookUpButton = h(
    'button',
    {
      type: 'button',
      class: 'link event-user-id',
      'aria-label': `Look up the history of user ${event.userId}`,
    },
    h('bdi', {}, event.userId),
  );
  lookUpButton.addEventListener('click', () => {
    ui.historyInput.value = event.userId;
    void lookUpHistory(event.userId, { focusResult: true });
  });
  return h(
    'li',
    { class: 'event', 'data-id': id },
    h(
      'p',
      { class: 'event-meta' },
      h('span', { class: 'badge', 'data-type': event.type }, typeLabel(event.type)),
      ' ',
      timeElement(event.changedAt),
    ),
    h(
      'p',
      { class: 'event-name' },
      h('span', { class: 'visually-hidden' }, 'Old name: '),
      h('bdi', { class: 'name' }, event.name),
    ),
    h('p', { class: 'event-user' }, 'User ', lookUpButton),
  );
}

function clearFeed() {
  ui.feed.replaceChildren();
  feed.rows.clear();
  feed.lastId = undefined;
  ui.feedEmpty.hidden = false;
}

// ---------------------------------------------------------------------------------------
// The connection

const stream = {
  source: undefined,
  downTimer: undefined,
  retryTimer: undefined,
  retryDelay: RETRY_MIN_MS,
  state: 'connecting',
};

function setConnection(state, text) {
  stream.state = state;
  ui.connection.dataset.state = state;
  ui.connectionText.textContent = text;
  ui.retry.hidden = state !== 'down';
}

/** Opens the stream; `resume` asks the server to replay what came after the last id seen. */
function connect({ resume }) {
  stream.source?.close();
  clearTimeout(stream.retryTimer);
  const params = new URLSearchParams();
  if (feed.userId !== undefined) params.set('userId', feed.userId);
  if (resume && feed.lastId !== undefined) params.set('lastEventId', feed.lastId.toString());
  const query = params.toString();
  const source = new EventSource(query ? `${STREAM_PATH}?${query}` : STREAM_PATH);
  stream.source = source;
  source.addEventListener('open', () => {
    if (source !== stream.source) return;
    clearTimeout(stream.downTimer);
    stream.downTimer = undefined;
    stream.retryDelay = RETRY_MIN_MS;
    setConnection('live', 'Live');
  });
  source.addEventListener('message', (message) => {
    if (source !== stream.source) return;
    onMessage(message);
  });
  source.addEventListener('error', () => {
    if (source !== stream.source) return;
    onError(source);
  });
}

function onMessage(message) {
  let event;
  try {
    event = JSON.parse(message.data);
  } catch {
    return;
  }
  if (!isNameEvent(event)) return;
  const id = /^\d+$/.test(message.lastEventId) ? message.lastEventId : '';
  if (id !== '' && (feed.lastId === undefined || BigInt(id) > feed.lastId)) {
    feed.lastId = BigInt(id);
  }
  showEvent(id, event);
}

function onError(source) {
  if (source.readyState === EventSource.CLOSED) {
    // The server answered with an error instead of a stream: the browser will not retry.
    goDown();
    scheduleRetry();
    return;
  }
  // CONNECTING: the browser reconnects by itself, sending Last-Event-ID.
  if (stream.state !== 'down') setConnection('reconnecting', 'Reconnecting…');
  stream.downTimer ??= setTimeout(goDown, DOWN_AFTER_MS);
}

function goDown() {
  clearTimeout(stream.downTimer);
  stream.downTimer = undefined;
  setConnection('down', 'Down: retrying automatically');
}

function scheduleRetry() {
  clearTimeout(stream.retryTimer);
  // Jitter, so pages do not all come back at the same instant after an outage.
  const delay = stream.retryDelay * (0.75 + Math.random() / 2);
  stream.retryDelay = Math.min(stream.retryDelay * 2, RETRY_MAX_MS);
  stream.retryTimer = setTimeout(() => connect({ resume: true }), delay);
}

ui.retry.addEventListener('click', () => {
  stream.retryDelay = RETRY_MIN_MS;
  setConnection('reconnecting', 'Reconnecting…');
  connect({ resume: true });
});

// ---------------------------------------------------------------------------------------
// The filter (?userId=, in the page's address too, so a filtered view can be shared)

function applyFilter(value) {
  const userId = value.trim() === '' ? undefined : value.trim();
  feed.userId = userId;
  ui.filterInput.value = userId ?? '';
  ui.filterClear.hidden = userId === undefined;
  ui.feedScope.replaceChildren(
    ...(userId === undefined
      ? ["Showing every user's name changes, newest first."]
      : ['Showing only user ', h('bdi', { class: 'scope-user' }, userId), ', newest first.']),
  );
  const url = new URL(location.href);
  if (userId === undefined) url.searchParams.delete('userId');
  else url.searchParams.set('userId', userId);
  history.replaceState(null, '', url);
  clearFeed();
  clearTimeout(stream.downTimer);
  stream.downTimer = undefined;
  stream.retryDelay = RETRY_MIN_MS;
  setConnection('connecting', 'Connecting…');
  connect({ resume: false });
}

ui.filterForm.addEventListener('submit', (submit) => {
  submit.preventDefault();
  applyFilter(ui.filterInput.value);
});

ui.filterClear.addEventListener('click', () => {
  applyFilter('');
  ui.filterInput.focus();
});

// ---------------------------------------------------------------------------------------
// The history lookup

let lookup;

async function lookUpHistory(userId, { focusResult = false } = {}) {
  lookup?.abort();
  const controller = new AbortController();
  lookup = controller;
  ui.historyResult.setAttribute('aria-busy', 'true');
  ui.historyResult.replaceChildren(h('p', { class: 'muted' }, 'Looking up…'));
  let content;
  try {
    const response = await fetch(historyPath(userId), {
      headers: { Accept: 'application/json' },
      signal: controller.signal,
    });
    const body = await response.json().catch(() => undefined);
    if (response.ok && Array.isArray(body?.prevnames)) {
      content = body.prevnames.length ? historyTable(userId, body.prevnames) : emptyHistory(userId);
    } else {
      const message = typeof body?.message === 'string' ? body.message : `HTTP ${response.status}`;
      const code = typeof body?.code === 'number' ? body.code : response.status;
      content = historyError(userId, message, code);
    }
  } catch {
    if (controller.signal.aborted) return;
    content = historyError(userId, 'The service could not be reached', undefined);
  }
  if (lookup !== controller) return;
  ui.historyResult.replaceChildren(content);
  ui.historyResult.removeAttribute('aria-busy');
  if (focusResult) {
    ui.historyResult.scrollIntoView({ block: 'nearest' });
    ui.historyResult.focus();
  }
}

function historyTable(userId, entries) {
  const count = entries.length === 1 ? '1 name' : `${entries.length} names`;
  return h(
    'table',
    { class: 'history' },
    h('caption', {}, 'Previous names of user ', h('bdi', {}, userId), ` (${count}), oldest first`),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        h('th', { scope: 'col' }, '#'),
        h('th', { scope: 'col' }, 'Type'),
        h('th', { scope: 'col' }, 'Name'),
        h('th', { scope: 'col' }, 'Changed at'),
      ),
    ),
    h(
      'tbody',
      {},
      ...entries.map((entry, index) =>
        h(
          'tr',
          {},
          h('td', { class: 'num' }, String(index + 1)),
          h('td', {}, typeLabel(String(entry.type))),
          h('td', {}, h('bdi', { class: 'name' }, String(entry.name))),
          h('td', {}, timeElement(String(entry.changedAt))),
        ),
      ),
    ),
  );
}

function emptyHistory(userId) {
  return h(
    'p',
    { class: 'empty' },
    'No previous names are recorded for user ',
    h('bdi', {}, userId),
    '.',
  );
}

function historyError(userId, message, code) {
  return h(
    'div',
    { class: 'error', role: 'alert' },
    h('p', {}, 'Could not look up user ', h('bdi', {}, userId), '.'),
    h(
      'p',
      { class: 'error-detail' },
      h('span', { class: 'error-message' }, message),
      code === undefined ? '' : ` (code ${code})`,
    ),
  );
}

ui.historyForm.addEventListener('submit', (submit) => {
  submit.preventDefault();
  const userId = ui.historyInput.value.trim();
  if (userId === '') {
    ui.historyResult.replaceChildren(
      h('p', { class: 'error', role: 'alert' }, 'Enter a user id to look up.'),
    );
    ui.historyInput.focus();
    return;
  }
  void lookUpHistory(userId);
});

// ---------------------------------------------------------------------------------------

applyFilter(new URLSearchParams(location.search).get('userId') ?? '');
