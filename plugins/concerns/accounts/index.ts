// The account and key service: accounts, keys, tiers, wallets and the request log as the
// operators' admin API, the CLI and the console serve them (input validated once, every refusal
// a catalogue code), with the views they answer in.
export * from './service.js'
export * from './views.js'
export * from './constants.js'
