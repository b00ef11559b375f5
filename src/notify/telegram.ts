import { badRequest } from '../errors.ts';
import { deliver, deliveryError, joinUrl, type AttemptLog } from './delivery.ts';
import { LIMITS, truncateText } from './limits.ts';
import type { SendOptions } from './send-options.ts';

/**
 * Telegram Bot API: `POST /bot<token>/sendMessage` `{chat_id, text,
 * parse_mode?}` answers `{ok, result: {message_id}}`; a refusal is
 * `{ok: false, error_code, description}`, a rate limit adds
 * `parameters.retry_after`. The token sits in the URL path: no message
 * names the path. Telegram has no idempotency key.
 */

export const TELEGRAM_API_BASE_URL = 'https://api.telegram.org';
export const TELEGRAM_PARSE_MODES = ['Markdown', 'MarkdownV2', 'HTML'] as const;

export interface TelegramConfig {
  botToken: string;
  chatId?: string | number;
  apiBaseUrl?: string;
}

const methodUrl = (config: TelegramConfig, method: string) => joinUrl(config.apiBaseUrl ?? TELEGRAM_API_BASE_URL, `/bot${config.botToken}/${method}`);

function checkOk(body: unknown, log: AttemptLog, config: TelegramConfig): void {
  const b = body as { ok?: unknown; description?: unknown } | undefined;
  if (b?.ok === true) return;
  throw deliveryError('Telegram', `Telegram refused the request: ${typeof b?.description === 'string' ? b.description : 'no ok in the answer'}`, log, [
    config.botToken,
  ]);
}

export async function sendTelegramMessage(
  config: TelegramConfig,
  message: { chatId?: string | number; text: string; parseMode?: string },
  options: SendOptions,
): Promise<{ messageId?: string; truncated: boolean; delivery: AttemptLog }> {
  const chatId = message.chatId ?? config.chatId;
  if (chatId === undefined || chatId === '') {
    throw badRequest('invalid_config', 'chatId is required: the chat id (e.g. "-1001234567890") or @channelusername.', { field: 'chatId' });
  }
  if (message.parseMode && !(TELEGRAM_PARSE_MODES as readonly string[]).includes(message.parseMode)) {
    throw badRequest('invalid_config', `parseMode must be one of ${TELEGRAM_PARSE_MODES.join(', ')}; got ${JSON.stringify(message.parseMode)}.`, {
      field: 'parseMode',
    });
  }
  const text = truncateText(message.text, LIMITS.telegramText);
  const res = await deliver(
    {
      method: 'POST',
      url: methodUrl(config, 'sendMessage'),
      json: { chat_id: chatId, text: text.text, ...(message.parseMode ? { parse_mode: message.parseMode } : {}) },
    },
    { ...options, provider: 'Telegram', secrets: [config.botToken] },
  );
  checkOk(res.body, res.log, config);
  const id = (res.body as { result?: { message_id?: unknown } }).result?.message_id;
  return { ...(id !== undefined ? { messageId: String(id) } : {}), truncated: text.truncated, delivery: res.log };
}

/** `getMe`: checks the token, sends nothing. */
export async function checkTelegram(config: TelegramConfig, options: SendOptions): Promise<string> {
  const res = await deliver(
    { method: 'GET', url: methodUrl(config, 'getMe') },
    { ...options, provider: 'Telegram', secrets: [config.botToken], maxAttempts: 1 },
  );
  checkOk(res.body, res.log, config);
  const username = (res.body as { result?: { username?: unknown } }).result?.username;
  return `Telegram getMe passed (bot ${typeof username === 'string' ? `@${username}` : 'unknown'}).`;
}
