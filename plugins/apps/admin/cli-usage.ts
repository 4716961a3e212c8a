// The usage lines of the operator commands, apart from the commands themselves: `model-gateway
// help` prints them without loading the store, the config loader or the server.
export const ACCOUNTS_USAGE = [
  'accounts create --name N [--tier T]      create an account (tier default: limits.default_tier)',
  '  accounts list [--limit N] [--after ID]   list accounts, oldest first',
  '  accounts get ID | suspend ID | reactivate ID | set-tier ID T',
  '  accounts set-models ID --models M1,M2 | --all   the models the account\'s keys may use (--all: every model)',
].join('\n')

export const KEYS_USAGE = [
  'keys create --account ID --name N [KEY FLAGS]   create a key; prints its plaintext `key` once',
  '  keys list --account ID | get ID | revoke ID | reveal ID | usage ID | reset-usage ID',
  '  keys update ID [--name N] [KEY FLAGS]',
  '  keys import-legacy --account ID --key gw_live_… (or --key - to read stdin) --name N [KEY FLAGS]',
  '    KEY FLAGS: --models a,b  --expires ISO  --timezone ZONE  --quota D  --daily-cap D  --monthly-cap D',
  '               --daily-image-cap N  --tags a,b  --policy TIER  --active true|false',
  '               (money D is a decimal string such as 25.00; on update `none` clears a setting)',
].join('\n')

export const WALLET_USAGE = [
  'wallet get ACCOUNT                                  balance, held, available',
  '  wallet credit ACCOUNT --amount D [--grant] [--idempotency-key K] [--note N]',
  '    a top-up by default (unlocks models that require one); --grant gives credit that does not',
].join('\n')

export const MODELS_USAGE = [
  'models list | get ID                                 every declared model: configured and effective status, pricing completeness',
  '  models publish ID | pause ID | retire ID | unpublish ID | reset ID',
  '    store a status over gateway.yaml\'s (reset: back to it); running instances follow within a second',
].join('\n')

export const TIERS_USAGE = 'tiers list                                           rate-limit tiers, lowest rank first'

export const REQUESTS_USAGE = [
  'requests list [--account ID] [--from ISO] [--to ISO] [--limit N] [--before CURSOR]   newest first',
].join('\n')
