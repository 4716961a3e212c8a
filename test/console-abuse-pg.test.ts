// The console against repeated abuse on PostgreSQL (the suite: helpers/console-abuse-suite.ts).
import { consoleAbuseSuite } from './helpers/console-abuse-suite.js'

consoleAbuseSuite('pg')
