import MarkdownIt from 'markdown-it';

/**
 * Markdown → HTML for the docs pages, by markdown-it (CommonMark plus GFM
 * tables). Raw HTML in a page (or a generated section) is escaped, never
 * passed through; links keep only http(s), mailto, relative and fragment
 * targets; headings get GitHub-style ids so `/docs/versioning#name` anchors work.
 */

const escapeHtml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');

/** GitHub-style heading anchors: `Legacy execute path` → `legacy-execute-path`. */
export const anchorOf = (text: string) =>
  text
    .toLowerCase()
    .replace(/`/g, '')
    .replace(/[^a-z0-9 _-]/g, '')
    .trim()
    .replace(/\s+/g, '-');

const isSafeHref = (url: string) => {
  const trimmed = url.trim();
  return /^(https?:|mailto:)/i.test(trimmed) || /^[/#.]/.test(trimmed) || /^[a-z0-9-]+(\.md)?(#[\w-]*)?$/i.test(trimmed);
};

const md = new MarkdownIt({ html: false, linkify: false, typographer: false });
md.validateLink = isSafeHref;
md.core.ruler.push('heading_ids', (state) => {
  const tokens = state.tokens;
  for (let i = 0; i < tokens.length; i++) {
    if (tokens[i]!.type !== 'heading_open') continue;
    const text = tokens[i + 1]?.children?.map((t) => t.content).join('') ?? '';
    tokens[i]!.attrSet('id', anchorOf(text));
  }
});

export function renderMarkdown(markdown: string): string {
  // HTML comments mark generated sections in the sources; they are not content.
  return md.render(markdown.replace(/<!--[\s\S]*?-->/g, ''));
}

export function htmlPage(title: string, bodyHtml: string, nav: { href: string; title: string }[]): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · Flowgate docs</title>
<style>
body{font:16px/1.55 system-ui,sans-serif;max-width:60rem;margin:0 auto;padding:1rem 1.5rem;color:#1d1d1f}
nav{font-size:.9rem;margin-bottom:1.5rem}nav a{margin-right:.8rem}
pre{background:#f5f5f7;padding:.8rem;overflow:auto;border-radius:6px}code{font-size:.9em}
table{border-collapse:collapse;margin:1rem 0}th,td{border:1px solid #d2d2d7;padding:.3rem .6rem;text-align:left;vertical-align:top}
blockquote{border-left:3px solid #d2d2d7;margin:0;padding-left:1rem;color:#515154}
</style>
</head>
<body>
<nav>${nav.map((n) => `<a href="${escapeHtml(n.href)}">${escapeHtml(n.title)}</a>`).join('')}</nav>
<main>
${bodyHtml}
</main>
</body>
</html>
`;
}
