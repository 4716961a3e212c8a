// `npm run docs`: rewrites the generated README sections (configuration reference, error table)
// and the generated sources (the catalogue's codes as a type).
import { readFileSync, writeFileSync } from 'node:fs'
import { GENERATED_FILES, renderReadme } from '../plugins/docs/generate.js'

const file = new URL('../README.md', import.meta.url)
writeFileSync(file, renderReadme(readFileSync(file, 'utf8')))
for (const [path, generate] of Object.entries(GENERATED_FILES)) writeFileSync(new URL(`../${path}`, import.meta.url), generate())
