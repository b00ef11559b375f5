/** The devnet MPP payer, shared with the payments benchmark. */
export { devnetMppx } from '../../scripts/devnet-mppx.ts';
