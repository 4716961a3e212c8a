// The console API on PostgreSQL (the suite: helpers/console-api-suite.ts).
import { consoleApiSuite } from './helpers/console-api-suite.js'

consoleApiSuite('pg')
