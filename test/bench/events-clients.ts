/**
 * The subscriber side of benchFanout, in its own process so client frame handling does not share
 * the server's event loop. Opens the connections, then after every `count` `next` frames sends the
 * arrival times (wall-clock ms, sub-ms precision) to the parent.
 */
import { performance } from 'node:perf_hooks';
import WebSocket from 'ws';

interface Start {
  url: string;
  key: string;
  subscribers: number;
  perConnection: number;
}

const wallClock = () => performance.timeOrigin + performance.now();

function open(options: Start, count: number, onNext: () => void): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(options.url.replace(/^http/, 'ws') + '/graphql', 'graphql-transport-ws');
    ws.on('error', reject);
    ws.on('open', () =>
      ws.send(JSON.stringify({ type: 'connection_init', payload: { apiKey: options.key } })),
    );
    ws.on('message', (raw: Buffer) => {
      // `next` frames are the hot path: recognise them without parsing JSON.
      if (raw.includes('"next"')) return onNext();
      const message = JSON.parse(raw.toString()) as { type: string };
      if (message.type === 'connection_ack') {
        for (let i = 0; i < count; i++) {
          ws.send(
            JSON.stringify({
              id: String(i),
              type: 'subscribe',
              payload: { query: 'subscription { tierChanged { eventId slug tier } }' },
            }),
          );
        }
        resolve(ws);
      } else if (message.type === 'ping') {
        ws.send(JSON.stringify({ type: 'pong' }));
      } else if (message.type === 'error') {
        reject(new Error(raw.toString()));
      }
    });
  });
}

process.once('message', async (options: Start) => {
  let arrivals: number[] = [];
  const onNext = () => {
    arrivals.push(wallClock());
    if (arrivals.length === options.subscribers) {
      process.send!({ type: 'arrivals', arrivals });
      arrivals = [];
    }
  };
  const sockets: WebSocket[] = [];
  for (let left = options.subscribers; left > 0; left -= options.perConnection) {
    sockets.push(await open(options, Math.min(options.perConnection, left), onNext));
  }
  process.send!({ type: 'ready' });
  process.on('disconnect', () => {
    for (const ws of sockets) ws.terminate();
    process.exit(0);
  });
});
