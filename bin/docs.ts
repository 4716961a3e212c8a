// `npm run docs`: rewrites the generated documentation sections (configuration reference in
// docs/configuration.md, error table in docs/errors.md) and the generated sources (the
// catalogue's codes as a type, the config types from schemas/).
import { readFileSync, writeFileSync } from 'node:fs'
import { CONFIG_TYPES_PATH, configTypesModule } from '../plugins/apps/docs/config-types.js'
import { GENERATED_DOCS, GENERATED_FILES, renderDoc } from '../plugins/apps/docs/generate.js'

for (const path of Object.keys(GENERATED_DOCS)) {
  const file = new URL(`../${path}`, import.meta.url)
  writeFileSync(file, renderDoc(path, readFileSync(file, 'utf8')))
}
for (const [path, generate] of Object.entries(GENERATED_FILES)) writeFileSync(new URL(`../${path}`, import.meta.url), generate())
writeFileSync(new URL(`../${CONFIG_TYPES_PATH}`, import.meta.url), await configTypesModule())
