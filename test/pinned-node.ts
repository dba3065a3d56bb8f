/**
 * Prints the folder of the pinned Node binary of a major version (`npx tsx test/pinned-node.ts
 * 24`), fetched once into .leasehold/ by the package tests' helper (test/package/common.ts):
 * .ci/run puts it first on PATH to run vitest under Node 24 too. The last line is the folder.
 */
import { nodeFolder } from './package/common.ts';

const major = process.argv[2];
if (!major || !/^\d+$/.test(major)) {
  console.error('usage: tsx test/pinned-node.ts <major>   (20, 22 or 24)');
  process.exit(2);
}
console.log(nodeFolder(major));
