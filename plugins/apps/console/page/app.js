// The console page: plain DOM, no framework, no inline script (the CSP forbids it). Every text
// from the server is set with textContent, never parsed as HTML. The CSRF token lives in memory
// only; the session itself is an HttpOnly cookie the script cannot read.
/* global document, location, window, fetch, navigator, crypto, TextEncoder, URLSearchParams */
'use strict'
;(function () {
  const API = '/console/v1'
  let csrf = null
  const main = document.getElementById('main')
  const statusEl = document.getElementById('status')
  const nav = document.getElementById('nav')

  function h (tag, attrs) {
    const el = document.createElementNS(tag === 'svg' || tag === 'rect' || tag === 'text' || tag === 'g' || tag === 'title' ? 'http://www.w3.org/2000/svg' : 'http://www.w3.org/1999/xhtml', tag)
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        const v = attrs[k]
        if (v === null || v === undefined || v === false) return
        if (k === 'text') el.textContent = v
        else if (k.indexOf('on') === 0) el.addEventListener(k.slice(2), v)
        else el.setAttribute(k, v === true ? '' : String(v))
      })
    }
    for (let i = 2; i < arguments.length; i++) {
      const c = arguments[i]
      if (c === null || c === undefined || c === false) continue
      if (Array.isArray(c)) c.forEach(function (x) { if (x) el.appendChild(typeof x === 'string' ? document.createTextNode(x) : x) })
      else el.appendChild(typeof c === 'string' ? document.createTextNode(c) : c)
    }
    return el
  }

  function say (text, isError) {
    statusEl.textContent = text || ''
    statusEl.className = isError ? 'error' : ''
  }

  function ApiError (status, error, retryAfter) {
    this.status = status
    this.code = error && error.code
    this.message = (error && error.message) || ('HTTP ' + status)
    this.retryAfter = retryAfter
  }

  // A note to show once the next page is drawn (a hash change clears the status line).
  let note = null
  function go (hash, text) {
    note = text
    if (location.hash === hash) route()
    else location.hash = hash
  }

  function waitText (seconds) {
    if (!(seconds > 0)) return 'a little while'
    if (seconds < 90) return seconds + (seconds === 1 ? ' second' : ' seconds')
    const minutes = Math.ceil(seconds / 60)
    return minutes + ' minutes'
  }

  function api (method, path, body) {
    const headers = { accept: 'application/json' }
    if (body !== undefined) headers['content-type'] = 'application/json'
    if (method !== 'GET' && csrf) headers['x-csrf-token'] = csrf
    return fetch(API + path, { method, headers, credentials: 'same-origin', body: body === undefined ? undefined : JSON.stringify(body) })
      .then(function (res) {
        if (res.status === 204) return null
        return res.json().then(function (json) {
          if (!res.ok) throw new ApiError(res.status, json && json.error, Number(res.headers.get('retry-after')))
          return json
        })
      })
  }

  function fail (err) {
    if (err && err.code === 'AUTH_REQUIRED') { csrf = null; nav.hidden = true; location.hash = '#signin'; return }
    // Throttled: say so plainly, with the wait the server gave (Retry-After).
    if (err && err.code === 'LIMIT_RATE_EXCEEDED') { say('Too many attempts. Try again in ' + waitText(err.retryAfter) + '.', true); return }
    say(err && err.code ? err.code + ': ' + err.message : String(err), true)
  }

  function field (label, name, type, extra) {
    const input = h('input', Object.assign({ name, id: 'f-' + name, type: type || 'text' }, extra || {}))
    return h('label', { for: 'f-' + name }, label, input)
  }

  function formValues (form) {
    const out = {}
    Array.prototype.forEach.call(form.elements, function (el) { if (el.name) out[el.name] = el.value })
    return out
  }

  function page (title) {
    main.replaceChildren(h('h1', { text: title }))
    document.title = title + ' — Model Gateway console'
    Array.prototype.forEach.call(nav.querySelectorAll('a'), function (a) {
      if (a.getAttribute('href') === location.hash.split('?')[0]) a.setAttribute('aria-current', 'page')
      else a.removeAttribute('aria-current')
    })
    return main
  }

  function param (name) {
    const q = location.hash.split('?')[1] || ''
    const m = new URLSearchParams(q).get(name)
    return m || ''
  }

  // ---- proof of work (the human check after failed sign-ins) --------------------------------

  function zeroBits (bytes) {
    let bits = 0
    for (let i = 0; i < bytes.length; i++) {
      if (bytes[i] === 0) { bits += 8; continue }
      return bits + Math.clz32(bytes[i]) - 24
    }
    return bits
  }

  function solve (challenge, difficulty) {
    const enc = new TextEncoder()
    let i = 0
    function step () {
      const batch = []
      for (let k = 0; k < 256; k++, i++) batch.push(i.toString(36))
      return Promise.all(batch.map(function (s) {
        return crypto.subtle.digest('SHA-256', enc.encode(challenge + ':' + s)).then(function (d) { return zeroBits(new Uint8Array(d)) >= difficulty ? s : null })
      })).then(function (found) {
        for (let j = 0; j < found.length; j++) if (found[j] !== null) return found[j]
        return step()
      })
    }
    return step()
  }

  // ---- signed-out pages ---------------------------------------------------------------------

  function signupPage () {
    page('Create an account')
    const form = h('form', { id: 'signup-form' },
      field('Email', 'email', 'email', { autocomplete: 'email', required: true }),
      field('Password', 'password', 'password', { autocomplete: 'new-password', required: true, minlength: 8 }),
      h('button', { type: 'submit', class: 'primary', text: 'Sign up' }))
    form.addEventListener('submit', function (e) {
      e.preventDefault()
      const v = formValues(form)
      api('POST', '/signup', { email: v.email, password: v.password }).then(function (r) {
        go('#verify?email=' + encodeURIComponent(r.email), 'We sent a code to ' + r.email + '.')
      }).catch(fail)
    })
    main.append(form, h('p', null, 'Have an account? ', h('a', { href: '#signin', text: 'Sign in' })))
  }

  function verifyPage () {
    page('Verify your email')
    const form = h('form', { id: 'verify-form' },
      field('Email', 'email', 'email', { value: param('email'), required: true }),
      field('Code from the email', 'code', 'text', { inputmode: 'numeric', pattern: '[0-9]{6}', autocomplete: 'one-time-code', required: true }),
      h('button', { type: 'submit', class: 'primary', text: 'Verify' }))
    form.addEventListener('submit', function (e) {
      e.preventDefault()
      const v = formValues(form)
      api('POST', '/verify', { email: v.email, code: v.code.trim() }).then(function () {
        go('#signin?email=' + encodeURIComponent(v.email), 'Email verified. Sign in.')
      }).catch(fail)
    })
    const resend = h('button', { type: 'button', text: 'Send a new code' })
    resend.addEventListener('click', function () {
      api('POST', '/verify/resend', { email: formValues(form).email }).then(function () { say('If the address is pending, a new code is on its way.') }).catch(fail)
    })
    main.append(form, resend)
  }

  function signinPage () {
    page('Sign in')
    const form = h('form', { id: 'signin-form' },
      field('Email', 'email', 'email', { value: param('email'), autocomplete: 'email', required: true }),
      field('Password', 'password', 'password', { autocomplete: 'current-password', required: true }),
      h('button', { type: 'submit', class: 'primary', text: 'Sign in' }))
    function attempt (body) {
      return api('POST', '/signin', body).catch(function (err) {
        if (err.code !== 'AUTH_HUMAN_CHECK_REQUIRED') throw err
        say('Checking that you are human (a few seconds of work in your browser)…')
        return api('GET', '/challenge').then(function (c) {
          return solve(c.challenge, c.difficulty).then(function (solution) {
            return api('POST', '/signin', Object.assign({}, body, { human_check: { challenge: c.challenge, solution } }))
          })
        })
      })
    }
    form.addEventListener('submit', function (e) {
      e.preventDefault()
      const v = formValues(form)
      attempt({ email: v.email, password: v.password }).then(function (r) {
        csrf = r.csrf_token
        say('')
        location.hash = '#dashboard'
      }).catch(fail)
    })
    main.append(form, h('p', null, 'New here? ', h('a', { href: '#signup', text: 'Create an account' }), ' · ', h('a', { href: '#verify', text: 'Enter a verification code' }), ' · ', h('a', { href: '#reset', text: 'Forgot your password?' })))
  }

  function resetPage () {
    page('Reset your password')
    const request = h('form', { id: 'reset-request-form' },
      field('Email', 'email', 'email', { value: param('email'), autocomplete: 'email', required: true }),
      h('button', { type: 'submit', text: 'Send reset code' }))
    const confirm = h('form', { id: 'reset-confirm-form' },
      field('Code from the email', 'code', 'text', { inputmode: 'numeric', pattern: '[0-9]{6}', autocomplete: 'one-time-code', required: true }),
      field('New password', 'password', 'password', { autocomplete: 'new-password', required: true, minlength: 8 }),
      h('button', { type: 'submit', class: 'primary', text: 'Set new password' }))
    request.addEventListener('submit', function (e) {
      e.preventDefault()
      api('POST', '/password/reset', { email: formValues(request).email }).then(function () {
        say('If the address has an account, a reset code is on its way.')
      }).catch(fail)
    })
    confirm.addEventListener('submit', function (e) {
      e.preventDefault()
      const email = formValues(request).email
      const v = formValues(confirm)
      api('POST', '/password/reset/confirm', { email, code: v.code.trim(), password: v.password }).then(function () {
        go('#signin?email=' + encodeURIComponent(email), 'Password changed; every session was signed out. Sign in with the new password.')
      }).catch(fail)
    })
    main.append(request, confirm, h('p', null, h('a', { href: '#signin', text: 'Back to sign in' })))
  }

  // ---- signed-in pages ----------------------------------------------------------------------

  function table (headers, rows) {
    return h('table', null,
      h('thead', null, h('tr', null, headers.map(function (t) { return h('th', { scope: 'col', text: t }) }))),
      h('tbody', null, rows))
  }

  function requestRows (list) {
    return list.map(function (r) {
      return h('tr', { 'data-request-id': r.request_id },
        h('td', { text: new Date(r.created_at).toLocaleString() }),
        h('td', { text: r.answered_model || r.requested_model || '' }),
        h('td', { text: String(r.status) }),
        h('td', { text: r.error_code || r.outcome }),
        h('td', { class: 'cost', text: r.cost === null ? '—' : r.cost }),
        h('td', { text: r.billing_status }))
    })
  }

  function chart (days) {
    const w = 640; const hgt = 180; const pad = 24
    const max = days.reduce(function (m, d) { return Math.max(m, Number(d.cost)) }, 0)
    const bw = (w - pad * 2) / Math.max(days.length, 1)
    const svg = h('svg', { class: 'chart', viewBox: '0 0 ' + w + ' ' + hgt, role: 'img', 'aria-label': 'Spend per day' })
    svg.appendChild(h('title', { text: 'Spend per day' }))
    days.forEach(function (d, i) {
      const v = Number(d.cost)
      const bh = max > 0 ? (hgt - pad * 2) * v / max : 0
      const x = pad + i * bw
      const g = h('g', null, h('rect', { x: x + 2, y: hgt - pad - bh, width: Math.max(bw - 4, 1), height: bh }, h('title', { text: d.date + ': ' + d.cost + ' (' + d.requests + ' requests)' })))
      if (i % Math.ceil(days.length / 7) === 0) g.appendChild(h('text', { x: x + 2, y: hgt - 8, text: d.date.slice(5) }))
      svg.appendChild(g)
    })
    const top = days.reduce(function (m, d) { return Number(d.cost) > Number(m) ? d.cost : m }, '0')
    svg.appendChild(h('text', { x: pad, y: 14, text: 'max ' + top + ' per day' }))
    return svg
  }

  function dashboardPage () {
    page('Dashboard')
    Promise.all([api('GET', '/wallet'), api('GET', '/usage?days=14'), api('GET', '/requests?limit=10')]).then(function (r) {
      const wallet = r[0]; const usage = r[1]; const reqs = r[2]
      main.append(
        h('section', { 'aria-labelledby': 'balance-h' },
          h('h2', { id: 'balance-h', text: 'Balance' }),
          h('p', { class: 'balance', id: 'balance', text: wallet.available }),
          h('p', { text: 'Balance ' + wallet.balance + ', held for running requests ' + wallet.held + '.' })),
        h('section', { 'aria-labelledby': 'spend-h' },
          h('h2', { id: 'spend-h', text: 'Spend per day (last 14 days, UTC)' }),
          chart(usage.days),
          h('p', { id: 'total-spend', text: 'Total: ' + usage.total_cost })),
        h('section', { 'aria-labelledby': 'recent-h' },
          h('h2', { id: 'recent-h', text: 'Recent requests' }),
          table(['Time', 'Model', 'Status', 'Outcome', 'Cost', 'Billing'], requestRows(reqs.data)),
          h('a', { href: '#requests', text: 'All requests' })))
    }).catch(fail)
  }

  function keysPage () {
    page('API keys')
    const form = h('form', { id: 'create-key-form', class: 'inline' },
      field('Name', 'name', 'text', { required: true, maxlength: 100 }),
      field('Allowed models (comma separated, empty = all)', 'allowed_models'),
      h('button', { type: 'submit', class: 'primary', text: 'Create key' }))
    const secret = h('div', { id: 'new-key' })
    const list = h('div', { id: 'key-list' })
    form.addEventListener('submit', function (e) {
      e.preventDefault()
      const v = formValues(form)
      const body = { name: v.name }
      const models = v.allowed_models.split(',').map(function (s) { return s.trim() }).filter(Boolean)
      if (models.length) body.allowed_models = models
      api('POST', '/keys', body).then(function (k) {
        form.reset()
        showSecret(secret, k, 'Your new key. Copy it now: this is the only time it is shown without a reveal.')
        load()
      }).catch(fail)
    })
    function load () {
      api('GET', '/keys').then(function (r) {
        list.replaceChildren(table(['Name', 'Prefix', 'Status', 'Allowed models', 'Created', 'Actions'], r.data.map(keyRow)))
      }).catch(fail)
    }
    function keyRow (k) {
      const actions = h('td')
      if (!k.revoked) {
        const reveal = h('button', { type: 'button', text: 'Reveal', 'aria-label': 'Reveal ' + k.name })
        reveal.addEventListener('click', function () {
          api('POST', '/keys/' + encodeURIComponent(k.id) + '/reveal').then(function (r) { showSecret(secret, r, 'Key ' + r.name + ':') }).catch(fail)
        })
        const restrict = h('button', { type: 'button', text: 'Restrict', 'aria-label': 'Restrict ' + k.name })
        restrict.addEventListener('click', function () {
          const input = h('input', { name: 'allowed_models', 'aria-label': 'Allowed models for ' + k.name, value: (k.allowed_models || []).join(', ') })
          const f = h('form', { class: 'inline restrict-form' }, input, h('button', { type: 'submit', text: 'Save models' }))
          f.addEventListener('submit', function (e) {
            e.preventDefault()
            const models = input.value.split(',').map(function (s) { return s.trim() }).filter(Boolean)
            api('PATCH', '/keys/' + encodeURIComponent(k.id), { allowed_models: models.length ? models : null }).then(function () { say('Key ' + k.name + ' restricted.'); load() }).catch(fail)
          })
          actions.appendChild(f)
          input.focus()
        })
        const revoke = h('button', { type: 'button', class: 'danger', text: 'Revoke', 'aria-label': 'Revoke ' + k.name })
        revoke.addEventListener('click', function () {
          if (!window.confirm('Revoke key "' + k.name + '"? Requests with it will fail, and it cannot be restored.')) return
          api('POST', '/keys/' + encodeURIComponent(k.id) + '/revoke').then(function () { say('Key ' + k.name + ' revoked.'); load() }).catch(fail)
        })
        actions.append(reveal, ' ', restrict, ' ', revoke)
      }
      return h('tr', { 'data-key-id': k.id },
        h('td', { text: k.name }), h('td', null, h('code', { text: k.prefix + '…' })), h('td', { class: 'key-status', text: k.status }),
        h('td', { text: k.allowed_models ? k.allowed_models.join(', ') : 'all' }), h('td', { text: new Date(k.created_at).toLocaleString() }), actions)
    }
    main.append(form, secret, list)
    load()
  }

  function showSecret (box, k, text) {
    const value = h('code', { class: 'secret', id: 'secret-value', text: k.key })
    const copy = h('button', { type: 'button', id: 'copy-key', text: 'Copy' })
    copy.addEventListener('click', function () {
      navigator.clipboard.writeText(k.key).then(function () { copy.textContent = 'Copied' }, function () { copy.textContent = 'Copy failed: select the text' })
    })
    const hide = h('button', { type: 'button', text: 'Hide' })
    hide.addEventListener('click', function () { box.replaceChildren() })
    box.replaceChildren(h('div', { class: 'secret-box', role: 'region', 'aria-label': 'Key plaintext' }, h('p', { text }), value, ' ', copy, ' ', hide))
  }

  function sessionsPage () {
    page('Sessions')
    const list = h('div')
    function load () {
      api('GET', '/sessions').then(function (r) {
        list.replaceChildren(table(['Signed in', 'Last seen', 'Address', 'Browser', ''], r.data.map(function (s) {
          const cell = h('td')
          if (s.current) cell.textContent = 'this session'
          else {
            const b = h('button', { type: 'button', class: 'danger', text: 'Revoke' })
            b.addEventListener('click', function () { api('DELETE', '/sessions/' + encodeURIComponent(s.id)).then(load).catch(fail) })
            cell.appendChild(b)
          }
          return h('tr', null, h('td', { text: new Date(s.created_at).toLocaleString() }), h('td', { text: new Date(s.last_seen_at).toLocaleString() }),
            h('td', { text: s.address }), h('td', { text: s.user_agent }), cell)
        })))
      }).catch(fail)
    }
    main.append(list)
    load()
  }

  function requestsPage () {
    page('Request log')
    const form = h('form', { class: 'inline', id: 'request-filter' },
      field('Model', 'model'),
      h('label', { for: 'f-outcome' }, 'Outcome', h('select', { name: 'outcome', id: 'f-outcome' },
        ['', 'completed', 'refused', 'upstream_error', 'stream_interrupted', 'client_disconnected'].map(function (o) { return h('option', { value: o, text: o || 'any' }) }))),
      field('From', 'from', 'date'), field('To', 'to', 'date'),
      h('button', { type: 'submit', text: 'Filter' }))
    const out = h('div')
    const more = h('button', { type: 'button', text: 'Older', hidden: true })
    let before = null
    function query () {
      const v = formValues(form)
      const q = new URLSearchParams({ limit: '50' })
      if (v.model) q.set('model', v.model)
      if (v.outcome) q.set('outcome', v.outcome)
      if (v.from) q.set('from', new Date(v.from).toISOString())
      if (v.to) q.set('to', new Date(new Date(v.to).getTime() + 86400000).toISOString())
      if (before) q.set('before', before)
      return '?' + q.toString()
    }
    function load (append) {
      api('GET', '/requests' + query()).then(function (r) {
        let t = out.querySelector('tbody')
        if (!append || !t) { out.replaceChildren(table(['Time', 'Model', 'Status', 'Outcome', 'Cost', 'Billing'], [])); t = out.querySelector('tbody') }
        t.append.apply(t, requestRows(r.data))
        before = r.next_before
        more.hidden = !r.has_more
      }).catch(fail)
    }
    form.addEventListener('submit', function (e) { e.preventDefault(); before = null; load(false) })
    more.addEventListener('click', function () { load(true) })
    main.append(form, out, more)
    load(false)
  }

  function modelsPage () {
    page('Models and prices')
    api('GET', '/models').then(function (r) {
      main.append(table(['Model', 'Status', 'Operations', 'Prices'], r.data.map(function (m) {
        const prices = Object.keys(m.pricing).map(function (k) { return k + ': ' + JSON.stringify(m.pricing[k]) }).join('; ')
        return h('tr', null, h('td', null, h('code', { text: m.id })), h('td', { text: m.status }), h('td', { text: m.operations.join(', ') }), h('td', { text: prices }))
      })))
    }).catch(fail)
  }

  const signedOut = { signup: signupPage, verify: verifyPage, signin: signinPage, reset: resetPage }
  const signedIn = { dashboard: dashboardPage, keys: keysPage, sessions: sessionsPage, requests: requestsPage, models: modelsPage }

  function route () {
    if (note !== null) { say(note); note = null }
    const name = (location.hash.slice(1).split('?')[0]) || 'dashboard'
    if (signedOut[name]) { nav.hidden = true; signedOut[name](); return }
    const show = signedIn[name] || dashboardPage
    if (csrf) { nav.hidden = false; show(); return }
    api('GET', '/session').then(function (s) {
      csrf = s.csrf_token
      nav.hidden = false
      show()
    }).catch(fail)
  }

  document.getElementById('signout').addEventListener('click', function () {
    api('POST', '/signout').then(function () { csrf = null; nav.hidden = true; go('#signin', 'Signed out.') }).catch(fail)
  })
  window.addEventListener('hashchange', function () { say(''); route() })
  route()
})()
