// The playground page's script: bundled by ../build.ts for the browser, never run by Node; type-checked
// by ./tsconfig.json (DOM types), which the project's typecheck script runs too.
import { createGraphiQLFetcher } from '@graphiql/toolkit';
import { GraphiQL } from 'graphiql';
import { createElement as h, useEffect, useMemo, useState } from 'react';
import { createRoot } from 'react-dom/client';
import 'graphiql/graphiql.css';
import './playground.css';

type Session =
  | { signedIn: false; signInUrl: string }
  | { signedIn: true; email: string; accountName: string; csrfToken: string };

interface IssuedKey {
  key: string;
  header: string;
  expiresAt: string;
  rateLimitPerMinute: number;
}

const DEFAULT_QUERY = `# A sandbox key sees its sandbox's demo data only.
# Ctrl-Space completes, Ctrl-Enter runs; the book icon opens the schema docs.
query Playground {
  viewer {
    accountName
    plan
  }
  portCalls(first: 5) {
    totalCount
    edges {
      node {
        voyageReference
        status
        eta
        vessel {
          name
          imo
        }
        port {
          name
          locode
        }
      }
    }
  }
}
`;

async function readError(response: Response): Promise<string> {
  try {
    const body = (await response.json()) as { error?: { message?: string } };
    return body.error?.message ?? `HTTP ${response.status}`;
  } catch {
    return `HTTP ${response.status}`;
  }
}

function SandboxBar(props: { session: Session | null; onKey: (key: IssuedKey) => void }) {
  const [issued, setIssued] = useState<IssuedKey | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const { session } = props;

  async function generate(csrfToken: string): Promise<void> {
    setBusy(true);
    setError(null);
    try {
      const response = await fetch('/playground/sandbox-keys', {
        method: 'POST',
        credentials: 'same-origin',
        headers: { 'content-type': 'application/json', 'x-csrf-token': csrfToken },
        body: '{}',
      });
      if (!response.ok) throw new Error(await readError(response));
      const key = (await response.json()) as IssuedKey;
      setIssued(key);
      props.onKey(key);
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  }

  let account;
  if (!session) account = h('span', { className: 'muted' }, 'Checking sign-in…');
  else if (!session.signedIn)
    account = h(
      'span',
      null,
      h('a', { id: 'sign-in', href: session.signInUrl }, 'Sign in'),
      ' to generate a sandbox key, or put your own key in the Headers tab.',
    );
  else
    account = h(
      'span',
      null,
      h('span', { id: 'signed-in-as' }, `${session.email} · ${session.accountName} `),
      h(
        'button',
        {
          type: 'button',
          id: 'generate-sandbox-key',
          disabled: busy,
          onClick: () => void generate(session.csrfToken),
        },
        busy ? 'Generating…' : 'Generate sandbox key',
      ),
    );

  return h(
    'header',
    { className: 'tg-bar' },
    h(
      'nav',
      null,
      h('a', { href: '/', className: 'brand' }, 'tidegate'),
      h('span', null, 'playground'),
      h('a', { href: '/readme' }, 'Docs'),
      h('a', { href: '/console' }, 'Console'),
    ),
    h('div', { className: 'tg-account' }, account),
    error ? h('p', { id: 'sandbox-error', role: 'alert', className: 'tg-error' }, error) : null,
    issued
      ? h(
          'p',
          { id: 'sandbox-issued', className: 'tg-issued', role: 'status' },
          'Sandbox key (shown once, now in the Headers tab): ',
          h('code', { id: 'sandbox-key' }, issued.key),
          ` · expires ${issued.expiresAt} · ${issued.rateLimitPerMinute} requests/minute`,
        )
      : null,
  );
}

function Playground() {
  const [session, setSession] = useState<Session | null>(null);
  const [headers, setHeaders] = useState<string | undefined>(undefined);
  const fetcher = useMemo(() => createGraphiQLFetcher({ url: '/graphql' }), []);

  useEffect(() => {
    fetch('/playground/session', { credentials: 'same-origin' })
      .then((r) => r.json() as Promise<Session>)
      .then(setSession, () => setSession({ signedIn: false, signInUrl: '/console/login' }));
  }, []);

  return h(
    'div',
    { className: 'tg-layout' },
    h(SandboxBar, {
      session,
      onKey: (key) => setHeaders(JSON.stringify({ [key.header]: key.key }, null, 2)),
    }),
    h(
      'main',
      { className: 'tg-ide' },
      h(GraphiQL, {
        fetcher,
        defaultQuery: DEFAULT_QUERY,
        headers,
        defaultEditorToolsVisibility: 'headers',
        // Keys must not outlive the tab in localStorage.
        shouldPersistHeaders: false,
      }),
    ),
  );
}

createRoot(document.getElementById('playground')!).render(h(Playground));
