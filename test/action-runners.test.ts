import { describe, expect, it } from 'vitest';
import { actions, getAction } from '../src/actions/index.ts';
import { builtInRunners, EXECUTOR_ACTIONS } from '../src/engine/runners/index.ts';
import { web3Steps } from '../src/onchain/steps/index.ts';

/**
 * The registry advertises what the engine runs, no more: an action reports
 * `featureEnabled: true` only when a runner (or the executor itself) runs it,
 * and the engine has no runner for an action the registry does not know.
 * Adding an action without a runner, or a runner without `runnable: false`
 * being dropped from its action, fails here.
 */

const runsHere = (actionType: string) => actionType in builtInRunners || EXECUTOR_ACTIONS.has(actionType);

describe('action registry against the engine runners', () => {
  it('every action that reports featureEnabled has a runner', () => {
    const advertisedWithoutRunner = actions.filter((a) => a.featureEnabled && !runsHere(a.actionType)).map((a) => a.actionType);
    expect(advertisedWithoutRunner).toEqual([]);
  });

  it('every action with a runner is runnable, and every action without one declares runnable: false', () => {
    for (const a of actions) expect(a.runnable !== false, a.actionType).toBe(runsHere(a.actionType));
  });

  it('every runner key and executor-handled action is a registry action', () => {
    const keys = [...Object.keys(builtInRunners), ...EXECUTOR_ACTIONS, ...Object.keys(web3Steps)];
    expect(keys.filter((key) => !getAction(key))).toEqual([]);
  });

  it('every action of the registry runs here (issue 16 turned the chat, e-mail and event-query actions on)', () => {
    expect(actions.filter((a) => !a.featureEnabled).map((a) => a.actionType)).toEqual([]);
    for (const type of ['discord/send-message', 'slack/send-message', 'telegram/send-message', 'sendgrid/send-email', 'resend/send-email', 'web3/query-events'])
      expect(runsHere(type), type).toBe(true);
  });
});
