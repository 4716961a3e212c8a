// The console against repeated abuse (sign-up, codes, reset) on PostgreSQL (the suite: helpers/console-abuse-codes-suite.ts).
import { consoleAbuseCodesSuite } from './helpers/console-abuse-codes-suite.js'

consoleAbuseCodesSuite('pg')
