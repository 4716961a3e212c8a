// `serve`'s usage line, apart from the command: `model-gateway help` prints it without loading the server.
export const SERVE_USAGE = 'serve [file]   start the gateway (config: $GATEWAY_CONFIG or ./gateway.yaml; PORT and HOST override it)'
