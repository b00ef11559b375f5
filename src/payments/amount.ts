/**
 * Prices are decimal strings end to end. Atomic units are computed with
 * integer arithmetic only, so "0.05" at 6 decimals is exactly "50000" and a
 * price finer than the token can represent is refused instead of rounded.
 */

const DECIMAL = /^(\d+)(?:\.(\d+))?$/;

export function toAtomicUnits(price: string, decimals: number): string {
  const match = DECIMAL.exec(price.trim());
  if (!match) throw new Error(`Price ${JSON.stringify(price)} is not a decimal string`);
  const [, whole, fraction = ''] = match;
  const trimmed = fraction.replace(/0+$/, '');
  if (trimmed.length > decimals) throw new Error(`Price ${price} has more decimal places than the payment token (${decimals})`);
  return (BigInt(whole) * 10n ** BigInt(decimals) + BigInt(trimmed.padEnd(decimals, '0') || '0')).toString();
}
