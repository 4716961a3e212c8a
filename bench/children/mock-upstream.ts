// Child: the mock provider, recording off, reporting its in-flight requests with memory samples.
import { startMockUpstream } from '../../test/fixtures/mock-upstream.js'
import { runChild } from './child-runtime.js'

await runChild(async () => {
  const mock = await startMockUpstream({ record: false })
  return {
    url: mock.url,
    close: () => mock.close(),
    probe: () => ({ activeRequests: mock.activeRequests(), openConnections: mock.openConnections() })
  }
})
