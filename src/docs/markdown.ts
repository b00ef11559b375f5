/**
 * A small Markdown → HTML renderer for the docs pages we write ourselves:
 * headings (with anchors), paragraphs, fenced code, lists, pipe tables,
 * block quotes, inline code, bold, italics and links. Everything is escaped
 * first and only these constructs are turned back into tags, so no raw HTML
 * from a page (or a generated section) reaches the browser; links keep only
 * http(s), mailto, relative and fragment targets.
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

function safeHref(url: string): string | undefined {
  const trimmed = url.trim();
  if (/^(https?:|mailto:)/i.test(trimmed) || /^[/#.]/.test(trimmed) || /^[a-z0-9-]+(\.md)?(#[\w-]*)?$/i.test(trimmed)) return trimmed;
  return undefined;
}

/** Inline markup on already-escaped text; code spans are cut out first so nothing inside them is interpreted. */
function inline(raw: string): string {
  const codes: string[] = [];
  const withoutCode = raw.replace(/`([^`]+)`/g, (_m, code: string) => `\u0000${codes.push(code) - 1}\u0000`);
  let html = escapeHtml(withoutCode);
  html = html.replace(/\[([^\]]+)\]\(([^)\s]+)\)/g, (match, text: string, url: string) => {
    const href = safeHref(url.replace(/&amp;/g, '&'));
    return href ? `<a href="${escapeHtml(href)}">${text}</a>` : match;
  });
  html = html.replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>').replace(/(^|[^\w*])\*([^*\s][^*]*)\*(?!\w)/g, '$1<em>$2</em>');
  return html.replace(/\u0000(\d+)\u0000/g, (_m, i: string) => `<code>${escapeHtml(codes[Number(i)]!)}</code>`);
}

const splitRow = (line: string) =>
  line
    .trim()
    .replace(/^\|/, '')
    .replace(/\|$/, '')
    .split(/(?<!\\)\|/)
    .map((cell) => cell.trim().replace(/\\\|/g, '|'));

const isTableSeparator = (line: string | undefined) => line !== undefined && /^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$/.test(line);

export function renderMarkdown(markdown: string): string {
  const lines = markdown.replace(/\r\n?/g, '\n').replace(/<!--[\s\S]*?-->/g, '').split('\n');
  const out: string[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i]!;
    if (line.trim() === '') {
      i++;
      continue;
    }
    const fence = /^```(\w[\w+-]*)?\s*$/.exec(line);
    if (fence) {
      const body: string[] = [];
      for (i++; i < lines.length && !/^```\s*$/.test(lines[i]!); i++) body.push(lines[i]!);
      i++;
      out.push(`<pre><code${fence[1] ? ` class="language-${fence[1]}"` : ''}>${escapeHtml(body.join('\n'))}</code></pre>`);
      continue;
    }
    const heading = /^(#{1,6})\s+(.+?)\s*#*\s*$/.exec(line);
    if (heading) {
      const level = heading[1]!.length;
      out.push(`<h${level} id="${anchorOf(heading[2]!)}">${inline(heading[2]!)}</h${level}>`);
      i++;
      continue;
    }
    if (line.includes('|') && isTableSeparator(lines[i + 1])) {
      const head = splitRow(line);
      const rows: string[][] = [];
      for (i += 2; i < lines.length && lines[i]!.includes('|') && lines[i]!.trim() !== ''; i++) rows.push(splitRow(lines[i]!));
      out.push(
        `<table><thead><tr>${head.map((c) => `<th>${inline(c)}</th>`).join('')}</tr></thead><tbody>${rows
          .map((r) => `<tr>${head.map((_h, k) => `<td>${inline(r[k] ?? '')}</td>`).join('')}</tr>`)
          .join('')}</tbody></table>`,
      );
      continue;
    }
    const listItem = /^\s*([-*]|\d+\.)\s+(.*)$/;
    if (listItem.test(line)) {
      const ordered = /^\s*\d+\./.test(line);
      const items: string[] = [];
      while (i < lines.length && (listItem.test(lines[i]!) || (/^\s{2,}\S/.test(lines[i]!) && items.length > 0))) {
        const match = listItem.exec(lines[i]!);
        if (match) items.push(match[2]!);
        else items[items.length - 1] += ` ${lines[i]!.trim()}`;
        i++;
      }
      const tag = ordered ? 'ol' : 'ul';
      out.push(`<${tag}>${items.map((item) => `<li>${inline(item)}</li>`).join('')}</${tag}>`);
      continue;
    }
    if (line.startsWith('>')) {
      const quoted: string[] = [];
      for (; i < lines.length && lines[i]!.startsWith('>'); i++) quoted.push(lines[i]!.replace(/^>\s?/, ''));
      out.push(`<blockquote>${renderMarkdown(quoted.join('\n'))}</blockquote>`);
      continue;
    }
    const paragraph: string[] = [];
    for (; i < lines.length && lines[i]!.trim() !== '' && !/^(#{1,6}\s|```|>|\s*([-*]|\d+\.)\s)/.test(lines[i]!); i++) paragraph.push(lines[i]!.trim());
    if (paragraph.length === 0) {
      // A line no block rule took (a lone `|`, say): show it as text rather than loop.
      paragraph.push(lines[i]!.trim());
      i++;
    }
    out.push(`<p>${inline(paragraph.join(' '))}</p>`);
  }
  return out.join('\n');
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
