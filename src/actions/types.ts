import type { AbiFunction, Address } from 'viem';

/**
 * Types of the action and trigger registry. The registry is plain data: the
 * schema document, the feature snapshot and the workflow validator all read
 * the same values, so none of them can drift from the others.
 */

export type Plan = 'free' | 'pro' | 'enterprise';

export type ActionCategory = 'System' | 'Web3' | 'DeFi' | 'Notifications' | 'Code' | 'Math';

/** Field name to a human type hint, e.g. `"string (chain ID)"`. */
export type FieldMap = Readonly<Record<string, string>>;

export type FeatureId =
  | 'workflow-control'
  | 'database-query'
  | 'web3-wallet'
  | 'web3-contracts'
  | 'web3-event-queries'
  | 'web3-token-approvals'
  | 'protocol-aave-v3'
  | 'notifications-chat'
  | 'notifications-email'
  | 'outbound-webhooks'
  | 'code-execution'
  | 'math-aggregate';

/** A plan-gated capability; actions point at one through `featureId`. */
export interface FeatureDefinition {
  id: FeatureId;
  name: string;
  description: string;
  category: ActionCategory;
  requiredPlan: Plan | null;
  /** True when the feature is switched off for every plan; its actions report `featureEnabled: false`. */
  rolledBack: boolean;
  /**
   * The snapshot reports a feature enabled only when it is not rolled back and
   * every action of it can run here (see `runnable`), so a feature never
   * mixes actions that run with ones that do not.
   */
}

/** Where a protocol call's ABI argument comes from: a config field, or a fixed value. */
export type ProtocolArg =
  | {
      name: string;
      type: string;
      /** Config field holding the value. */
      field: string;
      /** Used when the optional field is empty; `wallet` means the acting wallet's address. */
      fallback?: 'wallet' | string;
    }
  | { name: string; type: string; constant: string };

/** A protocol action described as data: which contract, which function, how config maps to arguments. */
export interface ProtocolBinding {
  /** Protocol slug, the `<protocol>` of `<protocol>/<action>`. */
  protocol: string;
  protocolName: string;
  /** Contract name as the protocol documents it, e.g. `Pool`. */
  contract: string;
  /** Contract address by EIP-155 chain id. */
  addresses: Readonly<Record<number, Address>>;
  kind: 'read' | 'write';
  functionName: string;
  /** The ABI fragment of `functionName`, as JSON. */
  abi: AbiFunction;
  /** ABI inputs in call order. */
  args: readonly ProtocolArg[];
  /** Named ABI outputs (empty for writes whose return value is not used). */
  outputs: readonly { name: string; type: string }[];
  /** Words an agent might search with that are not in the label or description. */
  keywords: readonly string[];
}

interface ActionSpecBase {
  /** The registry key and the value of `config.actionType`. */
  actionType: string;
  label: string;
  /** One or two sentences for an agent deciding whether to use this action. */
  description: string;
  category: ActionCategory;
  requiredFields: FieldMap;
  optionalFields: FieldMap;
  outputFields: FieldMap;
  featureId: FeatureId;
  /** A minimal valid `data.config`, shown to agents. */
  exampleConfig?: Readonly<Record<string, unknown>>;
  /**
   * `false` while the engine has no runner for this action: it stays in the
   * registry (agents see what is planned) but reports `featureEnabled: false`,
   * and saving a workflow that uses it is refused. Declared here rather than
   * read from the engine, which imports this registry (never the other way);
   * test/action-runners.test.ts holds the two together.
   */
  runnable?: false;
}

/** System actions (Pascal case with spaces) carry no credential flag at all (SPEC Node). */
export interface SystemActionSpec extends ActionSpecBase {
  integration: null;
  requiresCredentials?: never;
  /** Only `Condition` branches: edges leave it with `sourceHandle` `true` or `false`. */
  sourceHandles?: readonly ['true', 'false'];
  /** Comparison operators understood by `Condition`. */
  operators?: readonly string[];
}

/** Plugin actions are `<pluginType>/<slug>` and always say whether they need credentials. */
export interface PluginActionSpec extends ActionSpecBase {
  integration: string;
  requiresCredentials: boolean;
  protocol?: ProtocolBinding;
}

/** What the action modules author. Plan and rollout state come from the feature table. */
export type ActionSpec = SystemActionSpec | PluginActionSpec;

export type ActionDefinition = ActionSpec & {
  requiredPlan: Plan | null;
  /** False when the action's feature is rolled back or the action cannot run on this gateway (`runnable: false`). */
  featureEnabled: boolean;
};

export type TriggerType = 'Manual' | 'Schedule' | 'Webhook' | 'Event' | 'Block' | 'Transfer';

export interface TriggerDefinition {
  /** The registry key and the value of `config.triggerType`. */
  triggerType: TriggerType;
  label: string;
  description: string;
  requiredFields: FieldMap;
  optionalFields: FieldMap;
  outputFields: FieldMap;
  exampleConfig?: Readonly<Record<string, unknown>>;
}
