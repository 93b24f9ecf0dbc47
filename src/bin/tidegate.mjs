#!/usr/bin/env node
// The operator CLI. The sources are TypeScript run through tsx's loader, as `npm start` does.
import { register } from 'tsx/esm/api';

register();
const { runCli } = await import('../cli.ts');
process.exitCode = await runCli(process.argv.slice(2));
