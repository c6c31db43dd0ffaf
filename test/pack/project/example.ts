// Node entry point: TETHER_URL, TETHER_TOKEN, TETHER_CWD; prints the result as JSON.
import { TetherVersionError } from '@tether/client';
import { chat } from './chat.js';

const { TETHER_URL, TETHER_TOKEN, TETHER_CWD } = process.env;
if (!TETHER_URL || !TETHER_TOKEN || !TETHER_CWD) throw new Error('set TETHER_URL, TETHER_TOKEN and TETHER_CWD');
try {
  console.log(JSON.stringify(await chat(TETHER_URL, TETHER_TOKEN, TETHER_CWD, 'hello from node')));
} catch (err) {
  console.error(err instanceof TetherVersionError ? `version mismatch: ${err.message}` : err);
  process.exit(1);
}
