/**
 * The ceiling of `npm run bench`: a bare node:http server in its own process that answers each
 * heavy scenario's request with the bytes the gateway gave for it at start. The body is parsed once
 * and serialized again for every request, so the ceiling pays for JSON like any real handler, but
 * for nothing else (no routing framework, no auth, no data access). Started by run.ts with the
 * captured answers in a JSON file: `node --import tsx test/bench/ceiling.ts PORT FILE`.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

export interface CapturedAnswer {
  /** The path the ceiling answers it on, e.g. `/c/3`. */
  path: string;
  contentType: string;
  body: string;
}

const [port, file] = process.argv.slice(2);
const answers = new Map(
  (JSON.parse(readFileSync(file!, 'utf8')) as CapturedAnswer[]).map((a) => [
    a.path,
    { contentType: a.contentType, value: JSON.parse(a.body) as unknown },
  ]),
);

createServer((req, res) => {
  // Requests with a body (GraphQL POSTs) are read to the end, as any handler would.
  req.resume();
  req.on('end', () => {
    const answer = answers.get(req.url ?? '');
    if (!answer) {
      res.writeHead(404).end();
      return;
    }
    const body = JSON.stringify(answer.value);
    res.writeHead(200, { 'content-type': answer.contentType, 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
}).listen(Number(port), '127.0.0.1', () => console.log('ceiling ready'));
