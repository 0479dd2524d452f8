/** `npm run generate`: rewrites harness/wire/generated.ts and the standalone validators from schemas/. */
import { writeFileSync } from 'node:fs';
import { GENERATED_TYPES_PATH, generateWireTypes } from '../harness/wire/generate-types.ts';
import { GENERATED_VALIDATORS_PATH, generateWireValidators } from '../harness/wire/generate-validators.ts';

writeFileSync(GENERATED_TYPES_PATH, await generateWireTypes());
console.log(`wrote ${GENERATED_TYPES_PATH.pathname}`);
writeFileSync(GENERATED_VALIDATORS_PATH, generateWireValidators());
console.log(`wrote ${GENERATED_VALIDATORS_PATH.pathname}`);
