import { concern } from '../../foundation/pipeline/concern.js'
import { checkAdmission } from './check.js'
import { admissionPlugin, compileAdmission, type AdmissionChecks } from './index.js'

/** What a route or model declares a request can be refused for, before the hold (after the model is known). */
export const admissionConcern = concern({
  name: 'admission',
  checks: [checkAdmission],
  plan: { slice: 'admission', compile: (config) => compileAdmission(config) },
  plugin: async (parts: { readonly plan: { readonly admission: AdmissionChecks } }) => admissionPlugin(parts.plan.admission)
})
