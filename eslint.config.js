// One formatting style for the tree, enforced: neostandard (standard style for ESLint 9 flat
// config, as Fastify uses) with its TypeScript rules. `npm run lint` checks, `npm run lint -- --fix`
// rewrites; `npm test` runs it. ESLint reads this file's default export, hence no named export.
import neostandard from 'neostandard'

export default neostandard({
  ts: true,
  // Build output, benchmark builds and results, test run state and the embedded database.
  ignores: ['dist/**', '.test-build/**', '.bench-build/**', 'node_modules/**', 'data/**', 'bench/results/**', '.tap/**']
})
