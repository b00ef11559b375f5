import { Router, type Request, type RequestHandler, type Response } from 'express';
import { onlyUnder } from './path-gate.ts';
import type { DocPage, DocsSite } from '../docs/site.ts';

/**
 * /docs as HTML by default and as Markdown for `Accept: text/markdown` or a
 * `.md` suffix (Vary: Accept); /llms.txt and /sitemap.xml. Public and
 * cacheable: express adds the ETag and answers If-None-Match with 304.
 * An Accept we cannot serve gets HTML; an unknown page is a 404 in the
 * format that was asked for.
 */

const CACHE = 'public, max-age=300';
const SAFE_NAME = /^[A-Za-z0-9._/-]{1,100}$/;

/**
 * Docs pages are static text with inline styles: no script, no frame, no form, no other origin's content. The policy
 * makes that so for any page, should a rendering ever let markup through.
 */
const HTML_HEADERS = {
  'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
};

/** The Markdown renderer (markdown-it) loads with the first HTML page asked for, not at start (README "Start and memory"). */
let renderer: Promise<typeof import('../docs/markdown.ts')> | undefined;
const markdownRenderer = () => (renderer ??= import('../docs/markdown.ts'));

type Format = 'html' | 'markdown';

function formatOf(req: Request, suffixMarkdown: boolean): Format {
  if (suffixMarkdown) return 'markdown';
  return req.accepts(['text/html', 'text/markdown']) === 'text/markdown' ? 'markdown' : 'html';
}

export function docsRouter(site: DocsSite): RequestHandler {
  const router = Router();
  const nav = [{ href: '/docs', title: 'Docs' }, ...site.pages.map((p) => ({ href: `/docs/${p.slug}`, title: p.title }))];
  const htmlCache = new Map<string, string>();
  const html = async (page: DocPage, cache: boolean) => {
    const cached = cache ? htmlCache.get(page.slug) : undefined;
    if (cached) return cached;
    const { htmlPage, renderMarkdown } = await markdownRenderer();
    const rendered = htmlPage(page.title, renderMarkdown(page.markdown), nav);
    if (cache) htmlCache.set(page.slug, rendered);
    return rendered;
  };

  const send = async (res: Response, status: number, format: Format, page: DocPage) => {
    const body = format === 'markdown' ? page.markdown : await html(page, status === 200);
    res.status(status).setHeader('Vary', 'Accept');
    if (status === 200) res.setHeader('Cache-Control', CACHE);
    if (format === 'markdown') res.type('text/markdown; charset=utf-8').send(body);
    else res.type('text/html; charset=utf-8').set(HTML_HEADERS).send(body);
  };

  const notFound = (requested: string): DocPage => ({
    slug: 'not-found',
    title: 'Page not found',
    description: '',
    markdown: [
      '# Page not found',
      '',
      // Named only when the name is plainly a name: anything else (a backtick, brackets) would be read as Markdown,
      // and a link or text of the requester's choosing would show on the gateway's own origin.
      SAFE_NAME.test(requested)
        ? `There is no documentation page named \`${requested}\`. The pages are:`
        : 'There is no documentation page by that name. The pages are:',
      '',
      ...site.pages.map((p) => `- [${p.title}](/docs/${p.slug})`),
    ].join('\n'),
  });

  const text = (type: string, body: string) => (_req: Request, res: Response) => {
    res.setHeader('Cache-Control', CACHE);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.type(type).send(body);
  };
  router.get(['/llms.txt', '/docs/llms.txt'], text('text/plain; charset=utf-8', site.llmsTxt));
  router.get('/sitemap.xml', text('application/xml; charset=utf-8', site.sitemapXml));

  router.get(['/docs', '/docs.md', '/docs/index.md'], (req, res) => send(res, 200, formatOf(req, req.path.endsWith('.md')), site.index));

  router.get('/docs/:page', (req, res) => {
    const requested = req.params.page!;
    const suffix = requested.endsWith('.md');
    const slug = suffix ? requested.slice(0, -3) : requested;
    const page = site.get(slug);
    return send(res, page ? 200 : 404, formatOf(req, suffix), page ?? notFound(slug));
  });

  // Deeper paths are unknown pages too, answered in the requested format rather than as JSON.
  router.get('/docs/{*rest}', (req, res) => send(res, 404, formatOf(req, req.path.endsWith('.md')), notFound(req.path.slice('/docs/'.length))));

  // The paths above: other requests skip the router.
  return onlyUnder(['/docs', '/llms.txt', '/sitemap.xml'], router);
}
