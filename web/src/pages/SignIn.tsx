import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.ts';
import { ErrorNote, PageHeading } from '../components.tsx';
import { hasWallet, signInWithWallet } from '../wallet.ts';
import { navigate } from '../router.ts';

export function SignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const signIn = async () => {
    setBusy(true);
    setError(undefined);
    try {
      await signInWithWallet();
      onSignedIn();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main id="main" class="narrow">
      <PageHeading>Sign in to Flowgate</PageHeading>
      <p>Sign in with your browser wallet (Sign-In with Ethereum). The first sign-in of a wallet creates its account and organization.</p>
      <button type="button" onClick={signIn} disabled={busy}>
        {busy ? 'Waiting for the wallet…' : 'Sign in with wallet'}
      </button>
      {!hasWallet() && <p class="hint">No browser wallet was detected in this browser.</p>}
      <ErrorNote error={error} />
      <h2>On a server without a browser wallet</h2>
      <p>
        Run <code>npx flowgate open</code> on the server (same data directory as the gateway). It prints a one-time link that signs you in as the organization's
        owner; it works once, within 5 minutes.
      </p>
    </main>
  );
}

/**
 * Where `flowgate open` links land (/app/link#token=...). The token is in the
 * fragment, which never reaches a server; this page POSTs it, so a link
 * scanner fetching the URL consumes nothing.
 */
export function LinkLanding({ onSignedIn }: { onSignedIn: () => void }) {
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    const token = new URLSearchParams(location.hash.slice(1)).get('token');
    // Drop the token from the address bar and history at once.
    history.replaceState(null, '', location.pathname);
    if (!token) return setError(new Error('This link has no sign-in token. Run `flowgate open` on the server for a new link.'));
    api('/api/auth/link', { method: 'POST', body: { token } }).then(() => {
      onSignedIn();
      navigate('/', true);
    }, setError);
  }, []);
  return (
    <main id="main" class="narrow">
      <PageHeading>Signing in…</PageHeading>
      {error ? (
        <>
          <ErrorNote error={error} />
          <p>
            <a href="/app/">Go to the sign-in page</a>
          </p>
        </>
      ) : (
        <p role="status">Checking the one-time link.</p>
      )}
    </main>
  );
}
