// With `console.smtp_url` set, the verification code is mailed through SMTP (a real SMTP server
// in the test: smtp-server, with a password) and never lands in the outbox; the mailed code
// verifies. Without an SMTP server reachable, the sign-up still answers and no code is stored in
// the clear anywhere.
import t from 'tap'
import { SMTPServer } from 'smtp-server'
import type { AddressInfo } from 'node:net'
import { startTestGateway } from './helpers/gateway.js'
import { writeTestConfig } from './helpers/test-config.js'
import { consoleClient, PASSWORD, uniqueEmail } from './helpers/console.js'
import { CONSOLE_ADMIN_TOKEN } from './helpers/console-api-suite.js'

interface Received { from: string, to: string[], data: string, user: string | undefined }

async function smtpServer (): Promise<{ port: number, received: Received[], close: () => Promise<void> }> {
  const received: Received[] = []
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    onAuth (auth, _session, cb) {
      if (auth.username === 'mailer' && auth.password === 'mail-secret') cb(null, { user: auth.username })
      else cb(new Error('bad credentials'))
    },
    onData (stream, session, cb) {
      const parts: Buffer[] = []
      stream.on('data', (d: Buffer) => parts.push(d))
      stream.on('end', () => {
        received.push({
          from: session.envelope.mailFrom === false ? '' : session.envelope.mailFrom.address,
          to: session.envelope.rcptTo.map((r) => r.address),
          data: Buffer.concat(parts).toString('utf8'),
          user: session.user as string | undefined
        })
        cb()
      })
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => { resolve() }))
  const port = (server.server.address() as AddressInfo).port
  return { port, received, close: async () => { await new Promise<void>((resolve) => server.close(() => { resolve() })) } }
}

async function outbox (url: string, email: string): Promise<unknown[]> {
  const res = await fetch(`${url}/admin/v1/console/outbox?email=${encodeURIComponent(email)}`, { headers: { authorization: `Bearer ${CONSOLE_ADMIN_TOKEN}` } })
  return ((await res.json()) as { data: unknown[] }).data
}

function withSmtp (url: string): ReturnType<typeof writeTestConfig> {
  return writeTestConfig((c) => {
    const raw = c as unknown as Record<string, unknown>
    raw.console = { ...(raw.console as Record<string, unknown>), smtp_url: url, mail_from: 'Gateway <gw@example.test>' }
  })
}

t.test('the verification code is mailed through SMTP, with its credentials, and not kept in the outbox', async (t) => {
  const smtp = await smtpServer()
  const config = withSmtp(`smtp://mailer:mail-secret@127.0.0.1:${smtp.port}`)
  const gw = await startTestGateway({ configFile: config.file, server: { adminToken: CONSOLE_ADMIN_TOKEN } })
  t.teardown(async () => { await gw.close(); await smtp.close(); config.remove() })

  const email = uniqueEmail('smtp')
  const c = consoleClient(gw.url)
  await c.ok('POST', '/signup', { email, password: PASSWORD })
  t.equal(smtp.received.length, 1, 'one message reached the SMTP server')
  const mail = smtp.received[0] as Received
  t.same(mail.to, [email], 'to the address signed up')
  t.equal(mail.from, 'gw@example.test', 'from console.mail_from')
  t.equal(mail.user, 'mailer', 'the SMTP URL credentials authenticated')
  const code = /verification code is (\d{6})/.exec(mail.data)?.[1]
  t.ok(code, 'the mail carries a six-digit code')
  t.same(await outbox(gw.url, email), [], 'nothing in the outbox')
  t.match(await c.ok('POST', '/verify', { email, code }), { email, verified: true }, 'the mailed code verifies')
})

t.test('an SMTP server that is down: sign-up still answers, the code is neither mailed nor kept', async (t) => {
  const smtp = await smtpServer()
  const port = smtp.port
  await smtp.close()
  const config = withSmtp(`smtp://127.0.0.1:${port}`)
  const gw = await startTestGateway({ configFile: config.file, server: { adminToken: CONSOLE_ADMIN_TOKEN } })
  t.teardown(async () => { await gw.close(); config.remove() })
  const email = uniqueEmail('smtp-down')
  const res = await consoleClient(gw.url).call('POST', '/signup', { email, password: PASSWORD })
  t.equal(res.status, 201, 'the account is created; the user asks for a new code later')
  t.same(await outbox(gw.url, email), [], 'the code is not kept in the outbox either')
})
