import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FileTokenStore } from '../../src/client/node.js';
import { BrowserTokenStore, MemoryStorage } from '../../src/client/index.js';

const dir = mkdtempSync(join(tmpdir(), 'tidegate-client-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const tokens = {
  accessToken: 'a.b.c',
  refreshToken: 'tgr_x',
  expiresAt: 1_900_000_000_000,
  scope: 'read:vessels',
};

describe('FileTokenStore', () => {
  it('writes a 0600 file (whatever the umask, also over an existing file), reads it back, clears it', async () => {
    const path = join(dir, 'nested', 'tokens.json');
    writeFileSync(join(dir, 'loose.json'), '{}', { mode: 0o644 });
    const previous = process.umask(0);
    try {
      const store = new FileTokenStore(path);
      expect(await store.load()).toBeNull();
      await store.save(tokens);
      expect(statSync(path).mode & 0o777).toBe(0o600);
      expect(await store.load()).toEqual(tokens);
      const loose = new FileTokenStore(join(dir, 'loose.json'));
      await loose.save(tokens);
      expect(statSync(join(dir, 'loose.json')).mode & 0o777).toBe(0o600);
      await store.clear();
      expect(await store.load()).toBeNull();
      await store.clear();
    } finally {
      process.umask(previous);
    }
  });

  it('treats a corrupt or foreign file as no session', async () => {
    const path = join(dir, 'corrupt.json');
    writeFileSync(path, '{not json');
    expect(await new FileTokenStore(path).load()).toBeNull();
    writeFileSync(path, JSON.stringify({ access_token: 'x' }));
    expect(await new FileTokenStore(path).load()).toBeNull();
    expect(readFileSync(path, 'utf8')).toContain('access_token');
  });
});

describe('BrowserTokenStore', () => {
  it('keeps the token set under one key of a Storage-like object', () => {
    const storage = new MemoryStorage();
    const store = new BrowserTokenStore(storage, 'k');
    expect(store.load()).toBeNull();
    store.save(tokens);
    expect(JSON.parse(storage.getItem('k')!)).toEqual(tokens);
    expect(store.load()).toEqual(tokens);
    storage.setItem('k', 'garbage');
    expect(store.load()).toBeNull();
    store.clear();
    expect(storage.getItem('k')).toBeNull();
  });
});
