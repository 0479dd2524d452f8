/** `npm run generate`: rewrites harness/wire/generated.ts from schemas/. */
import { writeFileSync } from 'node:fs';
import { GENERATED_TYPES_PATH, generateWireTypes } from '../harness/wire/generate-types.ts';

writeFileSync(GENERATED_TYPES_PATH, await generateWireTypes());
console.log(`wrote ${GENERATED_TYPES_PATH.pathname}`);
