import 'reflect-metadata';
import { newTestSecretsKey } from './helpers/env.js';

// Runs before every test file, also when files share a worker process (vitest.config.ts,
// `isolate: false`): each file gets a master key of its own.
newTestSecretsKey();
