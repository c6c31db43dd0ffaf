// npm pack's (and publish's) first step, before `npm run build`: copies the
// repository's LICENSE into the package, and stops with what to do when the
// build's tools are missing. client-ts is a workspace of the repository's npm
// project, so TypeScript is installed in the repository root's node_modules by
// one `npm ci` there (`make` runs it too); in a fresh clone without it, the
// build would only say `tsc: not found`.
import { copyFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
try {
  require.resolve('typescript/package.json');
} catch {
  console.error(
    '@tether/client: TypeScript is not installed. client-ts is an npm workspace whose tools install at the repository root:\n' +
      '  (cd .. && npm ci)   # once, then npm pack again',
  );
  process.exit(1);
}
copyFileSync(new URL('../../LICENSE', import.meta.url), new URL('../LICENSE', import.meta.url));
