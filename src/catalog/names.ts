/** Names the catalog's files and the engine share: the catalog organization's slug and its e-mail integration's name. */
export const CATALOG_ORGANIZATION_SLUG = 'flowgate-catalog';
export const CATALOG_EMAIL_INTEGRATION = 'catalog-email';
