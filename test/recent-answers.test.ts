import { describe, expect, it } from 'vitest';
import { recentAnswers } from '../src/payments/recent-answers.ts';

/**
 * The short memory the payment code shares (the facilitator's verifications,
 * mppx's validations, the x402 offers): what is answered again, and what is
 * always asked afresh.
 */

function counted<T>(answer: (key: string) => Promise<T>) {
  const asked: string[] = [];
  return {
    asked,
    compute: (key: string) => () => {
      asked.push(key);
      return answer(key);
    },
  };
}

const inAMinute = (now: number) => now + 60_000;

describe('recentAnswers', () => {
  it('answers the same key from the first ask, concurrent asks included, and any other key afresh', async () => {
    const answers = recentAnswers<string>(10);
    const { asked, compute } = counted(async (key) => `answer to ${key}`);
    const [a, b] = await Promise.all([answers.get('k1', compute('k1'), inAMinute), answers.get('k1', compute('k1'), inAMinute)]);
    expect([a, b]).toEqual(['answer to k1', 'answer to k1']);
    expect(await answers.get('k2', compute('k2'), inAMinute)).toBe('answer to k2');
    expect(asked).toEqual(['k1', 'k2']);
  });

  it('asks again after a rejection, after an answer `keep` refuses, past its time, and once forgotten', async () => {
    const answers = recentAnswers<{ isValid: boolean }>(10, (answer) => answer.isValid);
    let fail = true;
    const { asked, compute } = counted(async () => {
      if (fail) throw new Error('node unreachable');
      return { isValid: false };
    });
    await expect(answers.get('k', compute('k'), inAMinute)).rejects.toThrow('node unreachable');
    fail = false;
    expect(await answers.get('k', compute('k'), inAMinute)).toEqual({ isValid: false });
    expect(await answers.get('k', compute('k'), inAMinute)).toEqual({ isValid: false });
    expect(asked).toHaveLength(3);

    const valid = recentAnswers<boolean>(10);
    const timed = counted(async () => true);
    await valid.get('old', timed.compute('old'), (now) => now - 1);
    await valid.get('old', timed.compute('old'), inAMinute);
    await valid.get('old', timed.compute('old'), inAMinute);
    valid.forget('old');
    await valid.get('old', timed.compute('old'), inAMinute);
    expect(timed.asked).toEqual(['old', 'old', 'old']);
  });

  it('keeps at most `max` answers, dropping the oldest first', async () => {
    const answers = recentAnswers<string>(2);
    const { asked, compute } = counted(async (key) => key);
    for (const key of ['a', 'b', 'c']) await answers.get(key, compute(key), inAMinute);
    await answers.get('c', compute('c'), inAMinute);
    await answers.get('b', compute('b'), inAMinute);
    await answers.get('a', compute('a'), inAMinute);
    expect(asked).toEqual(['a', 'b', 'c', 'a']);
  });
});
