// A tiny request/reply protocol over the Node IPC channel between the orchestrator and the
// load processes it forks. Children call `serveRpc`; the parent side lives in procs.mjs.

/** Serves `handlers[method](params)` to the parent; the process exits when the parent goes. */
export function serveRpc(handlers) {
  if (typeof process.send !== 'function') {
    throw new Error('This load process must be started by bench/run.mjs (it needs an IPC channel)');
  }
  process.on('message', (msg) => {
    if (!msg || msg.rpc !== 'call') {
      return;
    }
    const handler = handlers[msg.method];
    Promise.resolve()
      .then(() => {
        if (!handler) {
          throw new Error(`unknown method ${msg.method}`);
        }
        return handler(msg.params ?? {});
      })
      .then(
        (result) => process.send({ rpc: 'reply', id: msg.id, result }),
        (error) => process.send({ rpc: 'reply', id: msg.id, error: String(error?.stack ?? error) }),
      );
  });
  // An orphaned load process would keep thousands of sockets open: leave with the parent.
  process.on('disconnect', () => process.exit(0));
}

/** An unsolicited message to the parent (e.g. "every listener here has event 17"). */
export function notifyParent(event, data) {
  if (process.connected) {
    process.send({ rpc: 'event', event, data });
  }
}
