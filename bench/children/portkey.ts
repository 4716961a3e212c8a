// Child: Portkey's open-source AI gateway (npm @portkey-ai/gateway, node build), a peer the
// bench compares against; it is not a dependency of this project. BENCH_PORTKEY_DIR names a
// directory where it is installed (`npm install @portkey-ai/gateway@1.15 @hono/node-server@1.13.5`:
// on Node 20 version 1.15 streams only with that @hono/node-server). Its start script listens on
// `--port=N`; requests name the provider and the mock in headers (see portkeyTarget).
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { requiredEnv } from './addresses.js'
import { runChild } from './child-runtime.js'
import { freePort } from '../../test/helpers/free-port.js'

await runChild(async () => {
  const dir = requiredEnv('BENCH_PORTKEY_DIR')
  const port = await freePort()
  process.argv.push(`--port=${port}`, '--headless')
  process.env.NODE_ENV = 'production'
  console.clear = () => {} // its banner clears the terminal the bench prints to
  await import(pathToFileURL(join(dir, 'node_modules/@portkey-ai/gateway/build/start-server.js')).href)
  const url = `http://127.0.0.1:${port}`
  for (let i = 0; i < 200; i++) {
    try {
      if ((await fetch(url + '/')).ok) break
    } catch {}
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return { url, close: async () => { process.exit(0) } }
})
