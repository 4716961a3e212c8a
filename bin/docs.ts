// `npm run docs`: rewrites the generated README sections (configuration reference, error table).
import { readFileSync, writeFileSync } from 'node:fs'
import { renderReadme } from '../plugins/docs/generate.js'

const file = new URL('../README.md', import.meta.url)
writeFileSync(file, renderReadme(readFileSync(file, 'utf8')))
