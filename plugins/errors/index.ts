export { GatewayError, gatewayError, isGatewayError, type BillingStatus, type GatewayErrorDetails } from './gateway-error.js'
export { compileCatalogue, type Catalogue, type CatalogueEntry } from './catalogue.js'
export { renderError, errorFrame, billedHeader, envelopeBody, errorObject, type ErrorOccurrence, type RenderedError } from './envelopes.js'
export { classify, toOccurrence } from './to-occurrence.js'
