// Model listings and aliases through the official SDKs on PostgreSQL: each family's
// list shows exactly the key's models, nothing is billed, a bare alias bills its catalogue model.
import t from 'tap'
import { listingCases } from './helpers/listings-cases.js'

listingCases(t, 'pg')
