/**
 * The ceilings of `npm run bench`: a bare node:http server in its own process that answers each
 * heavy scenario's request with the bytes the gateway gave for it at start, in two ways:
 *
 * - `/json<path>`: the body is parsed once and serialized again for every request, so this ceiling
 *   pays for JSON like any handler that builds its answer, but for nothing else (no routing
 *   framework, no auth, no data access). Answers that execute (kept answers off) are judged
 *   against it.
 * - `/wire<path>`: the same bytes written from a ready `Buffer`, what a kept (pre-serialized)
 *   answer costs at best. Warm answers are judged against it, so none can score above 1.
 *
 * Started by run.ts with the captured answers in a JSON file:
 * `node --import tsx test/bench/ceiling.ts PORT FILE`.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

export interface CapturedAnswer {
  /** The path it is answered on under `/json` and `/wire`, e.g. `/s/3`. */
  path: string;
  contentType: string;
  body: string;
}

const [port, file] = process.argv.slice(2);
const captured = JSON.parse(readFileSync(file!, 'utf8')) as CapturedAnswer[];
const json = new Map(
  captured.map((a) => [
    `/json${a.path}`,
    { contentType: a.contentType, value: JSON.parse(a.body) as unknown },
  ]),
);
const wire = new Map(
  captured.map((a) => [`/wire${a.path}`, { contentType: a.contentType, bytes: Buffer.from(a.body) }]),
);

createServer((req, res) => {
  // Requests with a body (GraphQL POSTs) are read to the end, as any handler would.
  req.resume();
  req.on('end', () => {
    const url = req.url ?? '';
    const ready = wire.get(url);
    if (ready) {
      res.writeHead(200, { 'content-type': ready.contentType, 'content-length': ready.bytes.length });
      res.end(ready.bytes);
      return;
    }
    const answer = json.get(url);
    if (!answer) {
      res.writeHead(404).end();
      return;
    }
    const body = JSON.stringify(answer.value);
    res.writeHead(200, { 'content-type': answer.contentType, 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
}).listen(Number(port), '127.0.0.1', () => console.log('ceiling ready'));
