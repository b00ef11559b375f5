import { useState } from 'preact/hooks';
import { api, ApiError, type ApiKey, type Member } from '../api.ts';
import { ErrorNote, PageHeading, useLoad } from '../components.tsx';
import { when } from '../format.ts';
import { withStepUp } from '../wallet.ts';

/** Keys and members. Creating and revoking a key needs the wallet's step-up signature (SPEC Authentication rule 8), asked for in the page. */

const needsCode = (error: unknown) => error instanceof ApiError && (error.body.required ?? []).some((f) => f !== 'wallet');

function CreateKey({ onCreated }: { onCreated: () => void }) {
  const [name, setName] = useState('');
  const [scope, setScope] = useState('mcp:read');
  const [code, setCode] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const [created, setCreated] = useState<{ name: string; key: string }>();
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    setCreated(undefined);
    try {
      const body = { name: name.trim(), ...(scope ? { scope } : {}) };
      const key = await withStepUp((proof) => api<ApiKey & { key: string }>('/api/keys', { method: 'POST', body: { ...body, ...proof } }), {
        code: code.trim() || undefined,
      });
      setCreated({ name: key.name, key: key.key });
      setName('');
      setCode('');
      onCreated();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form onSubmit={submit} class="create-key" aria-labelledby="create-key-heading">
      <h3 id="create-key-heading">Create a key</h3>
      <label>
        Name
        <input name="name" required maxLength={100} value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
      </label>
      <label>
        Scope
        <select name="scope" value={scope} onChange={(e) => setScope((e.target as HTMLSelectElement).value)}>
          <option value="mcp:read">mcp:read (read and simulate)</option>
          <option value="mcp:write">mcp:write (also broadcast)</option>
          <option value="mcp:admin">mcp:admin</option>
          <option value="">unrestricted</option>
        </select>
      </label>
      {needsCode(error) || code ? (
        <label>
          Authenticator code
          <input name="code" inputMode="numeric" autoComplete="one-time-code" value={code} onInput={(e) => setCode((e.target as HTMLInputElement).value)} />
        </label>
      ) : null}
      <button type="submit" disabled={busy || !name.trim()}>
        {busy ? 'Waiting for the wallet…' : 'Create key (wallet signs)'}
      </button>
      <ErrorNote error={error} />
      {created && (
        <div class="new-key" role="status">
          <p>
            Key <strong>{created.name}</strong> created. Copy it now: it is not shown again.
          </p>
          <label>
            New key
            <input readOnly value={created.key} data-testid="new-key" onFocus={(e) => (e.target as HTMLInputElement).select()} />
          </label>
        </div>
      )}
    </form>
  );
}

function Keys() {
  const keys = useLoad(() => api<ApiKey[]>('/api/keys/list'), []);
  const [error, setError] = useState<unknown>();
  const [busyId, setBusyId] = useState<string>();
  const revoke = async (key: ApiKey) => {
    if (!confirm(`Revoke the key "${key.name}" (${key.prefix}…)? Agents using it stop working.`)) return;
    setBusyId(key.id);
    setError(undefined);
    try {
      await withStepUp((proof) => api(`/api/keys/${encodeURIComponent(key.id)}`, { method: 'DELETE', body: proof }));
      await keys.reload();
    } catch (e) {
      setError(e);
    } finally {
      setBusyId(undefined);
    }
  };
  return (
    <section aria-labelledby="keys-heading">
      <h2 id="keys-heading">API keys</h2>
      <ErrorNote error={keys.error ?? error} />
      <table>
        <caption class="visually-hidden">Organization API keys</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Key starts with</th>
            <th scope="col">Scope</th>
            <th scope="col">Created</th>
            <th scope="col">Last used</th>
            <th scope="col">State</th>
          </tr>
        </thead>
        <tbody>
          {(keys.data ?? []).map((key) => (
            <tr key={key.id} data-key-id={key.id}>
              <th scope="row">{key.name}</th>
              <td>
                <code>{key.prefix}…</code>
              </td>
              <td>{key.scope ?? 'unrestricted'}</td>
              <td>{when(key.createdAt)}</td>
              <td>{when(key.lastUsedAt)}</td>
              <td>
                {key.revokedAt ? (
                  `revoked ${when(key.revokedAt)}`
                ) : (
                  <button type="button" class="danger" disabled={busyId === key.id} onClick={() => revoke(key)} aria-label={`Revoke key ${key.name}`}>
                    Revoke
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <CreateKey onCreated={() => void keys.reload()} />
    </section>
  );
}

function Members() {
  const members = useLoad(() => api<Member[]>('/api/organization/members'), []);
  return (
    <section aria-labelledby="members-heading">
      <h2 id="members-heading">Members</h2>
      <ErrorNote error={members.error} />
      <table>
        <caption class="visually-hidden">Organization members</caption>
        <thead>
          <tr>
            <th scope="col">Member</th>
            <th scope="col">Role</th>
            <th scope="col">Wallet</th>
            <th scope="col">Joined</th>
          </tr>
        </thead>
        <tbody>
          {(members.data ?? []).map((m) => (
            <tr key={m.userId}>
              <th scope="row">{m.email ?? m.userId}</th>
              <td>{m.role}</td>
              <td>{m.walletAddress ? <code>{m.walletAddress}</code> : '—'}</td>
              <td>{when(m.joinedAt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p>
        Invite people with <code>POST /api/organization/invitations</code>; change roles with <code>PATCH /api/organization/members/&#123;userId&#125;</code>.
      </p>
    </section>
  );
}

export function Access() {
  return (
    <section>
      <PageHeading>Keys and members</PageHeading>
      <Keys />
      <Members />
    </section>
  );
}
