// `check`'s usage line, apart from the command: `model-gateway help` prints it without loading the config loader.
export const CHECK_USAGE = 'check [file]   validate a config file (default: $GATEWAY_CONFIG or ./gateway.yaml)'
