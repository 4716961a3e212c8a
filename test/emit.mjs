// The JavaScript the tests run, without the type check: each source of tsconfig.test.json
// transpiled on its own (TypeScript's transpileModule) into .test-build/, as tsc would emit it.
// The type check is a step of its own (`npm run typecheck`, with `isolatedModules`, which is
// what makes a file-by-file emit the same as tsc's); `npm test` runs it beside the tests.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import ts from 'typescript'
import { writeSchemaValidators } from '../bin/schema-validators.mjs'

const root = join(import.meta.dirname, '..')
const parsed = ts.getParsedCommandLineOfConfigFile(join(root, 'tsconfig.test.json'), {}, {
  ...ts.sys,
  onUnRecoverableConfigFileDiagnostic: (d) => { throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n')) }
})
if (parsed === undefined || parsed.errors.length > 0) {
  console.error('test/emit.mjs: tsconfig.test.json cannot be read')
  process.exit(1)
}
// package.json says "type": "module": every source is an ES module, which a file-by-file
// transpile cannot look up; NodeNext emits such a file as ESNext does.
const options = { ...parsed.options, module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Bundler }
const outDir = options.outDir
const rootDir = options.rootDir
rmSync(outDir, { recursive: true, force: true })
let failed = 0
for (const file of parsed.fileNames.filter((f) => !f.endsWith('.d.ts'))) {
  const out = join(outDir, relative(rootDir, file)).replace(/\.ts$/, '.js')
  const { outputText, sourceMapText, diagnostics } = ts.transpileModule(readFileSync(file, 'utf8'), {
    compilerOptions: options,
    fileName: file,
    reportDiagnostics: true
  })
  for (const d of diagnostics ?? []) {
    failed++
    console.error(`${relative(root, file)}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`)
  }
  mkdirSync(dirname(out), { recursive: true })
  writeFileSync(out, outputText)
  if (sourceMapText !== undefined) writeFileSync(`${out}.map`, sourceMapText)
}
// The config validators compiled ahead of time, as `npm run build` writes them into dist/.
writeSchemaValidators(join(root, 'schemas'), join(outDir, 'plugins', 'foundation', 'config', 'schema-validators.cjs'))
process.exit(failed === 0 ? 0 : 1)
