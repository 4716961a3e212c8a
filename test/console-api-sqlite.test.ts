// The console API on embedded SQLite (the suite: helpers/console-api-suite.ts).
import { consoleApiSuite } from './helpers/console-api-suite.js'

consoleApiSuite('sqlite')
