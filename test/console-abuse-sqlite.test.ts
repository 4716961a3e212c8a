// The console against repeated abuse on embedded SQLite (the suite: helpers/console-abuse-suite.ts).
import { consoleAbuseSuite } from './helpers/console-abuse-suite.js'

consoleAbuseSuite('sqlite')
