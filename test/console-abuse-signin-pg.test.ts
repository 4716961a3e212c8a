// The console against repeated abuse (sign-in, sessions, audit) on PostgreSQL (the suite: helpers/console-abuse-signin-suite.ts).
import { consoleAbuseSigninSuite } from './helpers/console-abuse-signin-suite.js'

consoleAbuseSigninSuite('pg')
