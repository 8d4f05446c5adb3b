// The npm test clients, from the project-owned folder scripts/setup.sh installs them into
// (third_party/node, pinned by its package-lock.json; never committed).
import { createRequire } from 'node:module';

const require = createRequire(new URL('../../third_party/node/package.json', import.meta.url));
export const { OpenAI } = require('openai');
const ajv = require('ajv');
export const Ajv = ajv.default ?? ajv;
