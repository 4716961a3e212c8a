import t from 'tap'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parse } from 'yaml'
import type { ErrorsConfig } from '../plugins/foundation/config/types.js'
import { errorCodesModule, GENERATED_DOCS, GENERATED_FILES, renderDoc } from '../plugins/apps/docs/generate.js'
import { ERROR_CODES, LEGACY_ALIASES } from '../plugins/foundation/errors/index.js'
import { repoPath } from './helpers/paths.js'

t.test('the configuration reference and the error table match the schemas and the catalogue', async (t) => {
  const read = (path: string): string => readFileSync(repoPath(path), 'utf8')
  for (const path of Object.keys(GENERATED_DOCS)) {
    const text = read(path)
    t.equal(text, renderDoc(path, text), `${path}: stale generated section: run \`npm run docs\``)
  }
  t.match(read('docs/configuration.md'), /`server\.body_limit_bytes`/)
  t.match(read('docs/errors.md'), /`BILLING_INSUFFICIENT_CREDITS` \| GW-BILLING-5001 \| 402/)
  t.throws(() => renderDoc('docs/errors.md', '# no markers'), /lacks the <!-- generated:error-table -->/, 'a file without its markers is refused')
})

t.test('every generated source file is what its generator writes today', async (t) => {
  t.ok(Object.keys(GENERATED_FILES).includes('plugins/foundation/errors/codes.ts'), 'the error codes are generated')
  for (const [path, generate] of Object.entries(GENERATED_FILES)) {
    const onDisk = readFileSync(repoPath(path), 'utf8')
    t.equal(onDisk, generate(), `${path} is stale: run \`npm run docs\``)
  }
})

t.test('the typed error codes are exactly the catalogue codes and legacy aliases, in order', async (t) => {
  const { errors } = parse(readFileSync(repoPath('config', 'errors.yaml'), 'utf8')) as { errors: ErrorsConfig }
  t.strictSame([...ERROR_CODES], errors.catalogue.map((e) => e.code))
  t.strictSame(
    Object.entries(LEGACY_ALIASES),
    errors.catalogue.flatMap((e) => (e.aliases ?? []).map((a) => [a, e.code])),
    'each legacy alias names its canonical code'
  )
})

t.test('the codes module follows its catalogue: another catalogue gives other codes', async (t) => {
  const source = errorCodesModule(repoPath('test', 'fixtures', 'config', 'parts', 'errors.yaml'))
  t.match(source, "export const ERROR_CODES = [\n  'AUTH_API_KEY_REQUIRED',\n  'MODEL_NOT_FOUND'\n] as const")
  t.match(source, "API_KEY_REQUIRED: 'AUTH_API_KEY_REQUIRED'")
  t.notMatch(source, 'GATEWAY_INTERNAL_ERROR', 'no code of the default catalogue leaks in')
})

t.test('the compiler refuses gatewayError with a code the catalogue lacks', async (t) => {
  const ts = (await import('typescript')).default
  const dir = repoPath('plugins', 'foundation', 'errors')
  /** The type errors of a one-line module beside gateway-error.ts. */
  const diagnose = (line: string): string[] => {
    const file = join(dir, '__probe__.ts')
    const source = `import { gatewayError } from './gateway-error.js'\nexport const probe = ${line}\n`
    const options = { strict: true, noEmit: true, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022, types: [], skipLibCheck: true }
    const host = ts.createCompilerHost(options)
    const read = host.readFile.bind(host)
    host.readFile = (f) => (f === file ? source : read(f))
    host.fileExists = ((exists) => (f: string) => f === file || exists(f))(host.fileExists.bind(host))
    const program = ts.createProgram([file], options, host)
    return ts.getPreEmitDiagnostics(program, program.getSourceFile(file)).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'))
  }
  t.strictSame(diagnose("gatewayError('MODEL_NOT_FOUND')"), [], 'a catalogue code compiles')
  const refused = diagnose("gatewayError('MODEL_NOT_FOUNDD')")
  t.equal(refused.length, 1, 'a misspelt code is a type error')
  t.match(refused[0] ?? '', /^Argument of type '"MODEL_NOT_FOUNDD"' is not assignable to parameter of type '"AUTH_REQUIRED" \| /, 'refused for its code')
})
