import { encodeFunctionData, getAddress, parseErc6492Signature, parseSignature, type Hex } from 'viem';
import type { PaymentPayload } from '@x402/core/types';
import { eip3009ABI } from '@x402/evm';
import { isRecord } from '../is-record.ts';

/** An x402 `exact` EIP-3009 payment's parts, as the in-process facilitator verifies and settles them. */

export interface Authorization {
  from: string;
  to: string;
  value: string;
  validAfter: string;
  validBefore: string;
  nonce: Hex;
}

export type Transfer = { authorization: Authorization; signature: Hex };

export function eip3009(payload: PaymentPayload): Transfer | undefined {
  const inner = payload.payload;
  if (!isRecord(inner) || !isRecord(inner.authorization) || typeof inner.signature !== 'string') return undefined;
  return { authorization: inner.authorization as unknown as Authorization, signature: inner.signature as Hex };
}

/** transferWithAuthorization's leading arguments (who, to whom, how much, when, which nonce). */
const authorizationArgs = (auth: Authorization) =>
  [getAddress(auth.from), getAddress(auth.to), BigInt(auth.value), BigInt(auth.validAfter), BigInt(auth.validBefore), auth.nonce] as const;

/** transferWithAuthorization's arguments with an EOA's (v, r, s), as x402 simulates and settles it; undefined for a smart wallet's bytes. */
export function ecdsaTransferArgs({ authorization, signature }: Transfer) {
  const inner = parseErc6492Signature(signature).signature;
  if (inner.length !== 132) return undefined;
  const { v, yParity, r, s } = parseSignature(inner);
  return [...authorizationArgs(authorization), Number(v ?? BigInt(yParity + 27)), r, s] as const;
}

/** transferWithAuthorization's calldata: (v, r, s) for an EOA's signature, bytes for a deployed smart wallet's (as x402's settle). */
export function transferCalldata(transfer: Transfer): { data: Hex; ecdsa: boolean } {
  const ecdsa = ecdsaTransferArgs(transfer);
  const args = ecdsa ?? [...authorizationArgs(transfer.authorization), parseErc6492Signature(transfer.signature).signature];
  return { data: encodeFunctionData({ abi: eip3009ABI, functionName: 'transferWithAuthorization', args }), ecdsa: ecdsa !== undefined };
}
