#!/usr/bin/env node
// The operator CLI, from the compiled JavaScript that `npm install` builds (npm run build).
const { runCli } = await import('../../dist/src/cli.js');
process.exitCode = await runCli(process.argv.slice(2));
