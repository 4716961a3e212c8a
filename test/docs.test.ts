import t from 'tap'
import { readFileSync } from 'node:fs'
import { renderReadme } from '../plugins/docs/generate.js'

t.test('the README configuration reference and error table match the schemas and the catalogue', async (t) => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
  t.equal(readme, renderReadme(readme), 'stale generated section: run `npm run docs`')
  t.match(readme, /`server\.body_limit_bytes`/)
  t.match(readme, /`BILLING_INSUFFICIENT_CREDITS` \| GW-BILLING-5001 \| 402/)
})
