/** The handlers every worker process knows. Add a kind: write `handlers/<kind-in-kebab-case>.ts`, list it here. */
import type { Handler } from '../handler.ts';
import receiptSend from './receipt-send.ts';

export const builtinHandlers: readonly Handler[] = [receiptSend];
