import { useEffect, useState } from 'preact/hooks';

/** Client-side routes under /app (the gateway answers every /app/* path with index.html). */

export const BASE = '/app';

export function navigate(path: string, replace = false) {
  const url = `${BASE}${path}`;
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  dispatchEvent(new PopStateEvent('popstate'));
}

export function usePath(): string {
  const read = () => location.pathname.replace(/^\/app/, '').replace(/\/+$/, '') || '/';
  const [path, setPath] = useState(read);
  useEffect(() => {
    const update = () => setPath(read());
    addEventListener('popstate', update);
    return () => removeEventListener('popstate', update);
  }, []);
  return path;
}

/** An in-app link: a real <a href> (open in new tab, keyboard, screen readers) that navigates without a reload. */
export function onLinkClick(event: MouseEvent, path: string) {
  if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  event.preventDefault();
  navigate(path);
  // Move focus to the new page's heading for screen readers and keyboard users.
  requestAnimationFrame(() => document.querySelector<HTMLElement>('main h1')?.focus());
}
