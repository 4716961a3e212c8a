// `npm run types`: rewrites plugins/foundation/config/types.ts from schemas/ (plugins/apps/docs/config-types.ts).
// Run it after editing a schema; `npm run docs` does it too, with the configuration reference.
import { writeFileSync } from 'node:fs'
import { CONFIG_TYPES_PATH, configTypesModule } from '../plugins/apps/docs/config-types.js'

writeFileSync(new URL(`../${CONFIG_TYPES_PATH}`, import.meta.url), await configTypesModule())
