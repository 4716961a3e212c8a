#!/usr/bin/env node
// model-gateway CLI: a table of subcommands, each `(args) => exit code`.
// Operator commands mirror the admin API (plugins/admin/cli.ts).
import { accountsCommand, ACCOUNTS_USAGE, keysCommand, KEYS_USAGE, modelsCommand, MODELS_USAGE, requestsCommand, REQUESTS_USAGE, tiersCommand, TIERS_USAGE, walletCommand, WALLET_USAGE } from '../plugins/admin/cli.js'
import { checkCommand, CHECK_USAGE } from '../plugins/config/check-command.js'
import { serveCommand, SERVE_USAGE } from '../plugins/server/serve-command.js'

type Command = (args: string[]) => Promise<number>

const usage = [
  'usage: model-gateway <command> [args]',
  '',
  'commands:',
  `  ${CHECK_USAGE}`,
  `  ${SERVE_USAGE}`,
  `  ${ACCOUNTS_USAGE}`,
  `  ${KEYS_USAGE}`,
  `  ${WALLET_USAGE}`,
  `  ${REQUESTS_USAGE}`,
  `  ${MODELS_USAGE}`,
  `  ${TIERS_USAGE}`,
  '  help           show this help'
].join('\n') + '\n'

const commands: Record<string, Command> = {
  check: checkCommand,
  serve: serveCommand,
  accounts: accountsCommand,
  keys: keysCommand,
  wallet: walletCommand,
  requests: requestsCommand,
  models: modelsCommand,
  tiers: tiersCommand,
  help: async () => {
    process.stdout.write(usage)
    return 0
  }
}

async function main (argv: readonly string[]): Promise<number> {
  const [given = 'help', ...args] = argv
  const name = given === '--help' || given === '-h' ? 'help' : given
  const command = Object.prototype.hasOwnProperty.call(commands, name) ? commands[name] : undefined
  if (command === undefined) {
    process.stderr.write(`model-gateway: unknown command "${name}"\n\n${usage}`)
    return 2
  }
  return await command(args)
}

try {
  process.exitCode = await main(process.argv.slice(2))
} catch (err) {
  // Nothing a command failed on reaches the operator as a stack trace: one line, exit 1.
  const message = err instanceof Error ? err.message : String(err)
  process.stderr.write(`model-gateway: ${message.split('\n', 1)[0] ?? message}\n`)
  process.exitCode = 1
}
