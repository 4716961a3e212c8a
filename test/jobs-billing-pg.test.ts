// Job billing on PostgreSQL: 100 jobs (60 succeed, 30 fail, 10 time out) → 60 charged, by the
// watcher alone and with clients polling; 20 concurrent polls post once; a forgotten job is released.
import t from 'tap'
import { jobBillingCases } from './helpers/jobs-billing-cases.js'

jobBillingCases(t, 'pg')
