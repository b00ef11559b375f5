import { Router, type Request, type Response } from 'express';
import type { DocPage, DocsSite } from '../docs/site.ts';
import { htmlPage, renderMarkdown } from '../docs/markdown.ts';

/**
 * /docs as HTML by default and as Markdown for `Accept: text/markdown` or a
 * `.md` suffix (Vary: Accept); /llms.txt and /sitemap.xml. Public and
 * cacheable: express adds the ETag and answers If-None-Match with 304.
 * An Accept we cannot serve gets HTML; an unknown page is a 404 in the
 * format that was asked for.
 */

const CACHE = 'public, max-age=300';

type Format = 'html' | 'markdown';

function formatOf(req: Request, suffixMarkdown: boolean): Format {
  if (suffixMarkdown) return 'markdown';
  return req.accepts(['text/html', 'text/markdown']) === 'text/markdown' ? 'markdown' : 'html';
}

export function docsRouter(site: DocsSite): Router {
  const router = Router();
  const nav = [{ href: '/docs', title: 'Docs' }, ...site.pages.map((p) => ({ href: `/docs/${p.slug}`, title: p.title }))];
  const htmlCache = new Map<string, string>();
  const html = (page: DocPage) => {
    let rendered = htmlCache.get(page.slug);
    if (!rendered) htmlCache.set(page.slug, (rendered = htmlPage(page.title, renderMarkdown(page.markdown), nav)));
    return rendered;
  };

  const send = (res: Response, status: number, format: Format, page: DocPage) => {
    res.status(status).setHeader('Vary', 'Accept');
    if (status === 200) res.setHeader('Cache-Control', CACHE);
    if (format === 'markdown') res.type('text/markdown; charset=utf-8').send(page.markdown);
    else res.type('text/html; charset=utf-8').send(status === 200 ? html(page) : htmlPage(page.title, renderMarkdown(page.markdown), nav));
  };

  const notFound = (requested: string): DocPage => ({
    slug: 'not-found',
    title: 'Page not found',
    description: '',
    markdown: [
      '# Page not found',
      '',
      `There is no documentation page named \`${requested.slice(0, 100)}\`. The pages are:`,
      '',
      ...site.pages.map((p) => `- [${p.title}](/docs/${p.slug})`),
    ].join('\n'),
  });

  const text = (type: string, body: string) => (_req: Request, res: Response) => {
    res.setHeader('Cache-Control', CACHE);
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
    send(res, page ? 200 : 404, formatOf(req, suffix), page ?? notFound(slug));
  });

  // Deeper paths are unknown pages too, answered in the requested format rather than as JSON.
  router.get('/docs/{*rest}', (req, res) => send(res, 404, formatOf(req, req.path.endsWith('.md')), notFound(req.path.slice('/docs/'.length))));

  return router;
}
