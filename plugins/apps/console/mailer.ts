// Where the console's mail goes: through SMTP when `console.smtp_url` is set (nodemailer), else
// into the outbox the operator reads through the admin API. A message is never logged: it
// carries a verification code.
import type { FastifyBaseLogger } from 'fastify'
import { createTransport, type Transporter } from 'nodemailer'

export interface ConsoleMail { to: string, subject: string, body: string }

export interface Mailer {
  /** True when mail goes out through SMTP (else the caller keeps the outbox). */
  readonly smtp: boolean
  /** True when the mail was handed to the SMTP server; false when there is none (outbox). */
  send (mail: ConsoleMail): Promise<boolean>
  close (): void
}

/** Mail through `smtpUrl`; with an empty URL, none (the caller keeps the outbox). */
export function createMailer (smtpUrl: string, from: string, log: FastifyBaseLogger): Mailer {
  if (smtpUrl === '') return { smtp: false, send: async () => false, close: () => {} }
  const transport: Transporter = createTransport(smtpUrl, { from })
  return {
    smtp: true,
    async send (mail) {
      try {
        await transport.sendMail({ to: mail.to, subject: mail.subject, text: mail.body })
        return true
      } catch (err) {
        // The address and the body stay out of the log; the user can ask for a new code.
        log.error({ code: (err as { code?: string }).code, responseCode: (err as { responseCode?: number }).responseCode }, 'console mail not sent')
        throw err
      }
    },
    close () { transport.close() }
  }
}
