import { ERROR_CODES } from '../errors.ts';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AnyTool } from '../../tools/define.ts';
import { describeDeprecations } from '../../tools/deprecations.ts';
import type { ToolFamily } from '../../tools/families.ts';
import { QUOTA_VARIABLES, RATE_LIMIT_VARIABLES, type Config, type QuotaName } from '../config.ts';
import { deriveSkills } from '../discovery/skills.ts';
import { discoveryUrls, LONG_DESCRIPTION, PRODUCT_NAME, SHORT_DESCRIPTION } from '../discovery/identity.ts';
import { actionReferenceMarkdown } from './action-reference.ts';

/**
 * The documentation site: the hand-written pages in docs/*.md (in this
 * order), with `{base_url}` replaced by the deployment's base URL and
 * `<!-- generated:NAME -->` markers filled from the registry, plus the action
 * reference generated from the action registry. Built once per gateway.
 */

export const DOCS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../docs');

/** One page per area, in reading order. Each is docs/<slug>.md. */
export const PAGE_SLUGS = [
  'quick-start',
  'authentication',
  'workflows',
  'executions',
  'notifications',
  'direct-execution',
  'payments',
  'mcp',
  'limits',
  'errors',
  'versioning',
] as const;
export const ACTION_REFERENCE_SLUG = 'actions';

export interface DocPage {
  slug: string;
  title: string;
  description: string;
  markdown: string;
}

export interface DocsSite {
  index: DocPage;
  pages: DocPage[];
  get(slug: string): DocPage | undefined;
  llmsTxt: string;
  sitemapXml: string;
}

const plain = (markdown: string) =>
  markdown
    .replace(/\[([^\]]+)\]\([^)]*\)/g, '$1')
    .replace(/[`*]/g, '')
    .trim();

function toPage(slug: string, markdown: string): DocPage {
  const title = /^#\s+(.+)$/m.exec(markdown)?.[1]?.trim() ?? slug;
  const afterTitle = markdown.replace(/^#\s+.+$/m, '').replace(/<!--[\s\S]*?-->/g, '');
  const firstParagraph =
    afterTitle
      .split(/\n\s*\n/)
      .map((p) => p.trim())
      .find((p) => p && !/^(#|\||```|[-*]\s|>)/.test(p)) ?? '';
  return { slug, title, description: plain(firstParagraph.replace(/\s+/g, ' ')), markdown };
}

interface SiteInputs {
  config: Pick<Config, 'baseUrl' | 'rateLimits' | 'rateLimitsEnabled' | 'quotas'>;
  registry: readonly AnyTool[];
  families: readonly ToolFamily[];
  docsDir?: string;
}

function generatedSections({ config, registry, families }: SiteInputs): Record<string, () => string> {
  return {
    'mcp-tools': () =>
      deriveSkills(registry, families)
        .map((skill) =>
          [
            `### ${skill.name}`,
            '',
            '| Tool | Needs | What it does |',
            '|---|---|---|',
            ...skill.tools.map(
              (t) =>
                `| \`${t.name}\` | ${t.scope === 'public' ? 'nothing (public)' : t.anonymous ? `nothing, or a key with ${t.scope}` : `a key with ${t.scope}`} | ${t.title} |`,
            ),
          ].join('\n'),
        )
        .join('\n\n'),
    deprecations: () =>
      [
        '| Name | What | Use instead | Deprecated | Sunset (earliest) | Accepted by |',
        '|---|---|---|---|---|---|',
        ...describeDeprecations(registry).map(
          (d) =>
            `| \`${d.name}\` | ${d.subject.replace(/\|/g, '\\|')} | ${d.replacement.replace(/\|/g, '\\|')} | ${d.deprecatedAt.slice(0, 10)} | ${d.sunsetAt.slice(0, 10)} | ${d.operations.map((o) => `\`${o}\``).join(', ') || 'not yet used by any operation'} |`,
        ),
      ].join('\n'),
    'rate-limits': () =>
      [
        `Rate limits are ${config.rateLimitsEnabled ? 'enforced' : 'switched off (FLOWGATE_RATE_LIMITS=off)'} on this deployment.`,
        '',
        '| Limit | Value here | Window | Variable |',
        '|---|---|---|---|',
        ...Object.entries(RATE_LIMIT_VARIABLES).map(
          ([name, spec]) =>
            `| ${spec.describes} | ${config.rateLimits[name as keyof typeof RATE_LIMIT_VARIABLES].limit} | ${spec.windowSeconds} s | \`${spec.variable}\` |`,
        ),
      ].join('\n'),
    quotas: () =>
      [
        '| Stored objects | Value here | Variable | To make room |',
        '|---|---|---|---|',
        ...(Object.entries(QUOTA_VARIABLES) as [QuotaName, (typeof QUOTA_VARIABLES)[QuotaName]][]).map(
          ([name, spec]) => `| ${spec.describes} | ${config.quotas[name]} | \`${spec.variable}\` | ${spec.remedy} |`,
        ),
      ].join('\n'),
    'error-codes': () =>
      [
        '| Status | Code | When |',
        '|---|---|---|',
        ...(Object.entries(ERROR_CODES) as [string, { status: number; meaning: string }][]).map(
          ([code, { status, meaning }]) => `| ${status} | \`${code}\` | ${meaning.replace(/\|/g, '\\|')} |`,
        ),
      ].join('\n'),
  };
}

export function buildDocsSite(inputs: SiteInputs): DocsSite {
  const { baseUrl } = inputs.config;
  const dir = inputs.docsDir ?? DOCS_DIR;
  const generated = generatedSections(inputs);
  const fill = (markdown: string) =>
    markdown.replace(/<!--\s*generated:([\w-]+)\s*-->/g, (marker, name: string) => generated[name]?.() ?? marker).replaceAll('{base_url}', baseUrl);

  const pages = [
    ...PAGE_SLUGS.map((slug) => toPage(slug, fill(fs.readFileSync(path.join(dir, `${slug}.md`), 'utf8')))),
    toPage(ACTION_REFERENCE_SLUG, actionReferenceMarkdown()),
  ];
  const bySlug = new Map(pages.map((p) => [p.slug, p]));
  const urls = discoveryUrls(baseUrl);

  const index = toPage(
    'index',
    [
      `# ${PRODUCT_NAME} documentation`,
      '',
      LONG_DESCRIPTION,
      '',
      ...pages.map((p) => `- [${p.title}](/docs/${p.slug}): ${p.description}`),
      '',
      '## Machine-readable descriptions',
      '',
      `- [OpenAPI 3.1](${urls.openApi}) for the REST API`,
      `- [MCP server card](${urls.serverCard}) and the MCP endpoint \`${urls.mcp}\``,
      `- [Agent card](${urls.agentCard})`,
      `- [llms.txt](${urls.llmsTxt}): this index for language models; every page is Markdown at \`/docs/<page>.md\``,
    ].join('\n'),
  );

  const llmsTxt = [
    `# ${PRODUCT_NAME}`,
    '',
    `> ${SHORT_DESCRIPTION}`,
    '',
    LONG_DESCRIPTION,
    '',
    '## Docs',
    '',
    ...pages.map((p) => `- [${p.title}](${baseUrl}/docs/${p.slug}.md): ${p.description}`),
    '',
    '## Machine-readable',
    '',
    `- [OpenAPI](${urls.openApi}): every REST operation`,
    `- [MCP server card](${urls.serverCard}): MCP endpoint ${urls.mcp}, protocol versions, authentication`,
    `- [Agent card](${urls.agentCard}): skills and security schemes`,
    '',
  ].join('\n');

  const escapeXml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const sitemapXml = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">',
    ...[`${baseUrl}/docs`, ...pages.map((p) => `${baseUrl}/docs/${p.slug}`)].map((loc) => `  <url><loc>${escapeXml(loc)}</loc></url>`),
    '</urlset>',
    '',
  ].join('\n');

  return { index, pages, get: (slug) => bySlug.get(slug), llmsTxt, sitemapXml };
}
