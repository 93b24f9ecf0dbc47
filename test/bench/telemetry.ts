/**
 * What tracing costs per GraphQL operation when it is off (the default): operationSpan
 * around a trivial operation, in-process, no HTTP. Off, the HTTP and SQL hooks are not even
 * registered, so this wrapper is the whole cost. Run: node --import tsx test/bench/telemetry.ts
 */
import { Telemetry, operationSpan } from '../../src/gateway/observability/telemetry.js';

const N = 2_000_000;
const work = () => 1;

function measure(name: string, run: () => unknown, n = N): void {
  for (let i = 0; i < n / 20; i++) run(); // warm up
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) run();
  const ns = Number(process.hrtime.bigint() - start) / n;
  console.log(`${name.padEnd(28)} ${ns.toFixed(1)} ns per operation`);
}

const off = Telemetry.off();
measure('bare operation', work);
measure('operationSpan, tracing off', () => operationSpan(off, 'query Bench', work));
