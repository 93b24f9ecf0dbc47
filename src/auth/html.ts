import type { FastifyReply } from 'fastify';

/** Markup that is already safe (built by `html`); anything else interpolated is escaped. */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

function render(value: unknown): string {
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value));
}

/** Tagged template that escapes every interpolation except nested `html` fragments. */
export function html(strings: TemplateStringsArray, ...values: unknown[]): SafeHtml {
  let out = strings[0]!;
  values.forEach((v, i) => {
    out += render(v) + strings[i + 1]!;
  });
  return new SafeHtml(out);
}

/**
 * No inline script or style anywhere, so the CSP can be strict. `form-action` is deliberately
 * absent: browsers apply it to the redirect after the consent form, which goes to the client.
 */
export const PAGE_HEADERS: Record<string, string> = {
  'content-security-policy': "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

/** A page; `head` adds the page's own assets (from our origin: the CSP allows nothing else). */
export function layout(title: string, body: SafeHtml, head: SafeHtml = html``): SafeHtml {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${title} · tidegate</title>
        <link rel="stylesheet" href="/console/assets/console.css" />
        <script src="/console/assets/console.js" defer></script>
        ${head}
      </head>
      <body>
        <header class="top"><span class="brand">tidegate</span></header>
        <main>${body}</main>
      </body>
    </html>`;
}

export function sendPage(
  reply: FastifyReply,
  status: number,
  title: string,
  body: SafeHtml,
  head?: SafeHtml,
): FastifyReply {
  return reply
    .code(status)
    .headers(PAGE_HEADERS)
    .type('text/html; charset=utf-8')
    .send(layout(title, body, head).value);
}

export function errorPage(reply: FastifyReply, status: number, title: string, message: string): FastifyReply {
  return sendPage(
    reply,
    status,
    title,
    html`<section class="card error-page">
      <h1>${title}</h1>
      <p class="error">${message}</p>
    </section>`,
  );
}

export const hidden = (name: string, value: string | undefined): SafeHtml =>
  value === undefined ? html`` : html`<input type="hidden" name="${name}" value="${value}" />`;

const CONSOLE_PAGES: ReadonlyArray<readonly [string, string]> = [
  ['/console', 'Keys and apps'],
  ['/console/usage', 'Usage'],
  ['/console/requests', 'Request log'],
  ['/console/webhooks', 'Webhooks'],
  ['/console/apps', 'Connected apps'],
];

/** The console's page links; the current one is marked for assistive technology too. */
export function consoleNav(current: string): SafeHtml {
  return html`<nav class="console-nav" aria-label="Console">
    ${CONSOLE_PAGES.map(([path, label]) =>
      path === current
        ? html`<a href="${path}" aria-current="page">${label}</a>`
        : html`<a href="${path}">${label}</a>`,
    )}
  </nav>`;
}
