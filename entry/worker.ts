export { defineHandler } from '../workers/handler.ts';
