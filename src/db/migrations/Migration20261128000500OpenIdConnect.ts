import { PortableMigration } from '../schema-builder.js';

/**
 * OpenID Connect: an authorization code remembers the client's nonce and when the user signed in,
 * both of which its ID token repeats. Null on codes issued without them (and before this).
 */
export class Migration20261128000500OpenIdConnect extends PortableMigration {
  override async up(): Promise<void> {
    this.schema((s) =>
      s.alterTable('oauth_codes', (t) => {
        t.string('nonce', 255).nullable();
        t.timestamp('auth_time', { useTz: true, precision: 3 }).nullable();
      }),
    );
  }
}
