import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { parseTokenSet, type TokenSet, type TokenStore } from './storage.js';

/**
 * Tokens in a JSON file only its owner can read (mode 0600), for scripts and command-line apps
 * (`@tidegate/client/node`: it needs `node:fs`, so browsers never load it). Written to a temporary
 * file of the same mode and renamed over the old one, so a crash never leaves half a file.
 */
export class FileTokenStore implements TokenStore {
  constructor(readonly path: string) {}

  async load(): Promise<TokenSet | null> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw e;
    }
    try {
      return parseTokenSet(JSON.parse(text));
    } catch {
      return null;
    }
  }

  async save(tokens: TokenSet): Promise<void> {
    await mkdir(dirname(this.path), { recursive: true, mode: 0o700 });
    const temporary = `${this.path}.${process.pid}.tmp`;
    await writeFile(temporary, JSON.stringify(tokens), { mode: 0o600 });
    // The mode given to writeFile is masked by the umask and ignored for an existing file.
    await chmod(temporary, 0o600);
    await rename(temporary, this.path);
  }

  async clear(): Promise<void> {
    await rm(this.path, { force: true });
  }
}
