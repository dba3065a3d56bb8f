/** The handlers every worker process knows. Add a kind: write `handlers/<kind>.ts`, list it here. */
import type { Handler } from '../handler';
import receiptSend from './receipt-send';

export const builtinHandlers: readonly Handler[] = [receiptSend];
