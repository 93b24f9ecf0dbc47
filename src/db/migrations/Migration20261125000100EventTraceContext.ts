import { PortableMigration } from '../schema-builder.js';

/**
 * The W3C trace context (`traceparent`) of the request that staged an event, so the process that
 * delivers its webhooks, whichever it is, continues that trace. Null when tracing is off.
 */
export class Migration20261125000100EventTraceContext extends PortableMigration {
  override async up(): Promise<void> {
    this.schema((s) =>
      s.alterTable('events', (t) => {
        // 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>: 55 characters.
        t.string('traceparent', 55).nullable();
      }),
    );
  }
}
