/**
 * Stands in for the `server-only` package under vitest (vitest.config.ts aliases it here). The
 * real one throws unless a bundler resolves it with the react-server condition, which is how
 * Next.js keeps lib/ out of client bundles; tests run lib/ on the server anyway.
 */
export {};
