import { describe, expect, it } from 'vitest';
import { validatingOnce } from '../src/payments/mpp-server.ts';

/**
 * mppx validates a credential before the gateway claims the payment and again
 * when it broadcasts: the second validation of the very same credential is
 * answered by the first, and nothing else is.
 */

const inAnHour = () => String(Math.floor(Date.now() / 1000) + 3600);
const credential = (signature: string, validBefore = inAnHour()) => ({ challenge: { id: 'c1' }, payload: { from: '0xabc', signature, validBefore } });

function counted(outcome: (signature: string) => Promise<unknown>) {
  const calls: string[] = [];
  const method = validatingOnce({
    name: 'evm',
    validate: async ({ credential: c }: { credential: ReturnType<typeof credential> }) => {
      calls.push(c.payload.signature);
      return outcome(c.payload.signature);
    },
  });
  return { calls, validate: (c: ReturnType<typeof credential>) => method.validate({ credential: c }) };
}

describe('validatingOnce (MPP credentials)', () => {
  it('answers a second validation of the same credential from the first, and validates any other credential itself', async () => {
    const { calls, validate } = counted(async (signature) => ({ payer: '0xabc', signature }));
    const first = await validate(credential('0x01'));
    expect(await validate(credential('0x01'))).toBe(first);
    expect(calls).toEqual(['0x01']);
    // One changed byte is another credential.
    expect(await validate(credential('0x02'))).toEqual({ payer: '0xabc', signature: '0x02' });
    expect(calls).toEqual(['0x01', '0x02']);
  });

  it('never remembers a refusal', async () => {
    const { calls, validate } = counted(async () => {
      throw new Error('EVM authorization signature mismatch');
    });
    await expect(validate(credential('0x01'))).rejects.toThrow(/signature mismatch/);
    await expect(validate(credential('0x01'))).rejects.toThrow(/signature mismatch/);
    expect(calls).toHaveLength(2);
  });

  it('validates again once the authorization is past its validBefore', async () => {
    const { calls, validate } = counted(async () => ({ ok: true }));
    const expired = credential('0x01', String(Math.floor(Date.now() / 1000) - 1));
    await validate(expired);
    await validate(expired);
    expect(calls).toHaveLength(2);
  });
});

describe("validatingOnce: an answer that stands in for the method's first validation (MPP)", () => {
  it('is asked first, once per credential; the method validates only when it does not answer, and a remembered answer asks neither', async () => {
    const order: string[] = [];
    const method = validatingOnce(
      {
        name: 'evm',
        validate: async ({ credential: c }: { credential: ReturnType<typeof credential> }) => {
          order.push(`validate ${c.payload.signature}`);
          return { by: 'method' };
        },
      },
      async (c) => {
        const { signature } = c.payload as { signature: string };
        order.push(`first ${signature}`);
        if (signature === '0x03') throw new Error('unreachable node');
        return signature === '0x01' ? { by: 'first' } : undefined;
      },
    );
    expect(await method.validate({ credential: credential('0x01') })).toEqual({ by: 'first' });
    expect(await method.validate({ credential: credential('0x01') })).toEqual({ by: 'first' });
    expect(await method.validate({ credential: credential('0x02') })).toEqual({ by: 'method' });
    expect(await method.validate({ credential: credential('0x03') })).toEqual({ by: 'method' });
    expect(order).toEqual(['first 0x01', 'first 0x02', 'validate 0x02', 'first 0x03', 'validate 0x03']);
  });
});
