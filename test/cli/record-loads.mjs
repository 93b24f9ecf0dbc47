// `node --import ./record-loads.mjs …`: appends every module URL the process resolves to the file
// named by RECORD_LOADS_TO, through Node's public module-customization hooks (module.register).
import { register } from 'node:module';

register(
  `data:text/javascript,${encodeURIComponent(`
import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  appendFileSync(process.env.RECORD_LOADS_TO, resolved.url + '\\n');
  return resolved;
}`)}`,
);
