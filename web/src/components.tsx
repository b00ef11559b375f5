import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { BASE, onLinkClick } from './router.ts';
import { statusClass } from './format.ts';

export function Link(props: { to: string; children: ComponentChildren; current?: boolean; class?: string }) {
  return (
    <a
      href={`${BASE}${props.to}`}
      class={props.class}
      aria-current={props.current ? 'page' : undefined}
      onClick={(e) => onLinkClick(e as MouseEvent, props.to)}
    >
      {props.children}
    </a>
  );
}

export const Status = ({ status }: { status: string }) => <span class={`status ${statusClass(status)}`}>{status}</span>;

export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  return (
    <p class="error" role="alert">
      {error instanceof Error ? error.message : String(error)}
    </p>
  );
}

/** Loads data on mount and when `deps` change; `reload` fetches again. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]) {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true });
  const reload = useCallback(() => {
    setState((s) => ({ ...s, loading: true }));
    return load().then(
      (data) => setState({ data, loading: false }),
      (error) => setState({ error, loading: false }),
    );
  }, deps);
  useEffect(() => {
    void reload();
  }, [reload]);
  return { ...state, reload };
}

export function PageHeading({ children }: { children: ComponentChildren }) {
  return <h1 tabIndex={-1}>{children}</h1>;
}
