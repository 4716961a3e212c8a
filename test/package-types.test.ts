// Package users get types: a small consumer, in a directory of its own where `model-gateway`
// resolves by name to this package (its package.json `exports`, hence dist/), type-checks
// under strict NodeNext settings with exactly three errors: the three wrong uses it holds, each
// marked WRONG. Missing types fail the import; `any` types would let the wrong uses through.
import t from 'tap'
import { ROOT } from './helpers/paths.js'
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { builtCli } from './helpers/built-cli.js'

const root = ROOT
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')

const CONSUMER = `
import Fastify from 'fastify'
import { ConfigError, buildServer, formatProblem, loadConfig, modelGateway, type GatewayConfig, type GatewayPlugin } from 'model-gateway'

const config: GatewayConfig = await loadConfig('gateway.yaml', { PORT: '8080' })
const port: number = config.server.port
const app = Fastify()
await app.register(modelGateway, { config })

await app.register(modelGateway, {}) // WRONG: the gateway plugin needs a config
await loadConfig(42) // WRONG: loadConfig takes a file name
const wrong: string = config.server.port // WRONG: server.port is a number

const plugin: GatewayPlugin = { name: 'mine' }
try { await loadConfig('nowhere.yaml') } catch (err) { if (err instanceof ConfigError) console.log(err.problems.map(formatProblem)) }
console.log(port, wrong, plugin, typeof buildServer)
`

function typeCheck (dir: string): { code: number, output: string } {
  try {
    const output = execFileSync(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
    return { code: 0, output }
  } catch (err) {
    const e = err as { status: number | null, stdout?: string, stderr?: string }
    return { code: e.status ?? 1, output: `${e.stdout ?? ''}${e.stderr ?? ''}` }
  }
}

t.test('a consumer of the built package type-checks, bar its three wrong uses', async (t) => {
  builtCli() // dist/ is built and not older than the sources
  const dir = mkdtempSync(join(tmpdir(), 'gw-types-'))
  t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })
  mkdirSync(join(dir, 'node_modules', '@types'), { recursive: true })
  symlinkSync(root, join(dir, 'node_modules', 'model-gateway'), 'dir')
  symlinkSync(join(root, 'node_modules', 'fastify'), join(dir, 'node_modules', 'fastify'), 'dir')
  symlinkSync(join(root, 'node_modules', '@types', 'node'), join(dir, 'node_modules', '@types', 'node'), 'dir')
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', type: 'module', private: true }))
  writeFileSync(join(dir, 'consumer.ts'), CONSUMER)
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, types: ['node'], skipLibCheck: true },
    files: ['consumer.ts']
  }))
  const result = typeCheck(dir)
  const errors = [...result.output.matchAll(/^consumer\.ts\((\d+),\d+\): error (TS\d+)/gm)].map((m) => ({ line: Number(m[1]), code: m[2] }))
  const wrongLines = CONSUMER.split('\n').flatMap((l, i) => l.includes('// WRONG') ? [i + 1] : [])
  t.equal(wrongLines.length, 3, 'the consumer holds three wrong uses')
  if (!t.same(errors.map((e) => e.line), wrongLines, 'tsc reports the wrong uses')) t.comment(result.output)
  t.equal(result.output.match(/error TS\d+/g)?.length, 3, 'and nothing else')
  t.notMatch(result.output, /TS7016|Could not find a declaration file/, 'the package has declarations')
})
