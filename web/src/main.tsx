import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, SIGNED_OUT_EVENT, type SessionInfo } from './api.ts';
import { Link } from './components.tsx';
import { navigate, usePath } from './router.ts';
import { Overview } from './pages/Overview.tsx';
import { Runs } from './pages/Runs.tsx';
import { RunDetail } from './pages/RunDetail.tsx';
import { Workflows } from './pages/Workflows.tsx';
import { Spend } from './pages/Spend.tsx';
import { Access } from './pages/Access.tsx';
import { LinkLanding, SignIn } from './pages/SignIn.tsx';
import './style.css';

const NAV = [
  { to: '/', label: 'Overview' },
  { to: '/runs', label: 'Runs' },
  { to: '/workflows', label: 'Workflows' },
  { to: '/spend', label: 'Spend' },
  { to: '/access', label: 'Keys and members' },
];

function Page({ path }: { path: string }) {
  const [, first, second] = path.split('/');
  if (first === 'runs' && second) return <RunDetail id={decodeURIComponent(second)} />;
  if (first === 'runs') return <Runs />;
  if (first === 'workflows') return <Workflows id={second ? decodeURIComponent(second) : undefined} />;
  if (first === 'spend') return <Spend />;
  if (first === 'access') return <Access />;
  if (path === '/') return <Overview />;
  return (
    <section>
      <h1 tabIndex={-1}>Page not found</h1>
      <p>
        There is no dashboard page at <code>{path}</code>. <Link to="/">Go to the overview</Link>.
      </p>
    </section>
  );
}

function App() {
  const path = usePath();
  const [session, setSession] = useState<SessionInfo | null | undefined>(undefined);
  const [version, setVersion] = useState(0);
  useEffect(() => {
    if (path === '/link') return;
    // Any failure to read the session shows the sign-in page, which says what to do next.
    api<SessionInfo>('/api/auth/session').then(setSession, () => setSession(null));
  }, [version, path === '/link']);

  useEffect(() => {
    const signedOut = () => setSession(null);
    addEventListener(SIGNED_OUT_EVENT, signedOut);
    return () => removeEventListener(SIGNED_OUT_EVENT, signedOut);
  }, []);

  useEffect(() => {
    document.title = `${NAV.find((n) => n.to === path)?.label ?? 'Flowgate'} · Flowgate dashboard`;
  }, [path]);

  if (path === '/link') return <LinkLanding onSignedIn={() => setVersion((v) => v + 1)} />;
  if (session === null) return <SignIn onSignedIn={() => setVersion((v) => v + 1)} />;

  const signOut = async () => {
    await api('/api/auth/sign-out', { method: 'POST', body: {} }).catch(() => undefined);
    setSession(null);
    navigate('/', true);
  };
  const current = (to: string) => (to === '/' ? path === '/' : path === to || path.startsWith(`${to}/`));
  // While the session is read, the page is already mounted, hidden, so its own requests go out alongside
  // the session's instead of after it (the Runs page's first rows no longer wait for two round trips).
  // Signed out, its calls answer 401, which leads to the sign-in page like the session's answer does.
  return (
    <>
      {session === undefined ? (
        <p role="status">Loading…</p>
      ) : (
        <a class="skip" href="#main">
          Skip to content
        </a>
      )}
      {session && (
        <header class="top">
          <strong class="brand">Flowgate</strong>
          <nav aria-label="Dashboard">
            <ul>
              {NAV.map((n) => (
                <li key={n.to}>
                  <Link to={n.to} current={current(n.to)}>
                    {n.label}
                  </Link>
                </li>
              ))}
            </ul>
          </nav>
          <span class="who">
            {session.organization.name} ({session.organization.role})
            <button type="button" class="secondary" onClick={signOut}>
              Sign out
            </button>
          </span>
        </header>
      )}
      <main id="main" hidden={session === undefined}>
        <Page path={path} />
      </main>
    </>
  );
}

render(<App />, document.getElementById('root')!);
