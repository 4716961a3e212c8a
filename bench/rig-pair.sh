#!/usr/bin/env bash
# Two gateway checkouts in one run of the rig (../shared/bench-rig), beside the bare proxy: each
# round runs the bare proxy and both gateways in turn, so the machine's drift (its speed moves by
# tens of percent over minutes) falls on both trees alike. Runs of one tree alternating with runs
# of the other put the bare proxy 19% faster in one tree's runs than in the other's on
# 2026-11-27 (BENCHMARKS.md). The floors are still read on the rig itself; this compares trees.
#
#   bench/rig-pair.sh RIG CHECKOUT_A NAME_A CHECKOUT_B NAME_B [rig args...]
#   bench/rig-pair.sh ../shared/bench-rig . main /tmp/base base --scenarios json0,sse20 --rounds 3 --duration 8 --sse-hold 0
#
# Each checkout must be built (`npm run build`). The rig is copied to a temporary folder and its
# bench.mjs given a second target there (the shared copy is not changed); each gateway starts as
# gateway-vs-peers.sh starts one (embedded store, a `bench` tier, pinned to core 1). Prints, per
# scenario and tree, the median of the per-round ratios to the bare proxy, the rounds, and the
# CPU per request as a multiple of the bare proxy's in the same round.
set -euo pipefail
RIG=$(cd "${1:?rig folder}" && pwd); A_DIR=$(cd "${2:?checkout A}" && pwd); A=${3:?name A}; B_DIR=$(cd "${4:?checkout B}" && pwd); B=${5:?name B}
shift 5
work=$(mktemp -d)
pids=()
cleanup () {
  for p in "${pids[@]}"; do kill -- "-$p" 2>/dev/null || true; done
  rm -rf "$work" "$A_DIR/.peers-bench-gateway.yaml" "$B_DIR/.peers-bench-gateway.yaml"
}
trap cleanup EXIT
cp -r "$RIG" "$work/rig" && rm -rf "$work/rig/results"
[ -d "$work/rig/node_modules/fastify" ] || (cd "$work/rig" && npm ci --no-audit --no-fund >/dev/null)

# The second target: the same options as the first, under --target2*.
node - "$work/rig/bench.mjs" <<'JS'
const fs = require('node:fs')
const file = process.argv[2]
let s = fs.readFileSync(file, 'utf8')
const edit = (from, to) => {
  if (!s.includes(from)) { console.error(`rig-pair: bench.mjs has changed, cannot add a second target (missing: ${from})`); process.exit(2) }
  s = s.replace(from, to)
}
edit("targetPid: null,", "targetPid: null, target2Url: null, target2Name: 'target2', target2Headers: [], target2Pid: null,")
edit("    case '--target-pid': o.targetPid = Number(take()); break;",
  "    case '--target-pid': o.targetPid = Number(take()); break;\n    case '--target2': o.target2Url = take().replace(/\\/$/, ''); break;\n    case '--target2-name': o.target2Name = take(); break;\n    case '--target2-header': o.target2Headers.push(take()); break;\n    case '--target2-pid': o.target2Pid = Number(take()); break;")
edit("if (o.targetUrl && !o.configs.includes(o.targetName)) o.configs.push(o.targetName);",
  "if (o.targetUrl && !o.configs.includes(o.targetName)) o.configs.push(o.targetName);\nif (o.target2Url && !o.configs.includes(o.target2Name)) o.configs.push(o.target2Name);")
edit("if (o.targetUrl) defs[o.targetName] = { url: o.targetUrl, headers: [], external: true, pid: o.targetPid };",
  "if (o.targetUrl) defs[o.targetName] = { url: o.targetUrl, headers: [], external: true, pid: o.targetPid };\nif (o.target2Url) defs[o.target2Name] = { url: o.target2Url, headers: [], external: true, pid: o.target2Pid, own: o.target2Headers };")
edit("...(defs[cfg].external ? o.targetHeaders : [])", "...(defs[cfg].external ? (defs[cfg].own ?? o.targetHeaders) : [])")
fs.writeFileSync(file, s)
JS

# start DIR NAME: a gateway on a fresh data folder; sets PORT, KEY and PID.
start () {
  local dir=$1 name=$2 port data tok aport cfg key
  port=$(( 20000 + RANDOM % 20000 )); aport=$((port + 1)); data="$work/data-$name"; mkdir -p "$data"
  tok=pair-$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
  cfg=$dir/.peers-bench-gateway.yaml
  awk '{print} /^  tiers:/ && !d {print "    bench: { rank: 99, requests_per_minute: 100000000, concurrent_streams: 1000000 }"; d=1}' "$dir/gateway.yaml" \
    | sed -E 's/^(  max_connections_per_address:) *[0-9]+/\1 0/' > "$cfg"
  (cd "$dir" && PORT=$port HOST=127.0.0.1 GATEWAY_DATA_DIR=$data GATEWAY_CONFIG=$cfg GATEWAY_ADMIN_TOKEN=$tok GATEWAY_ADMIN_PORT=$aport LOG_LEVEL=warn \
    OPENAI_BASE_URL=http://127.0.0.1:18080 OPENAI_API_KEY=sk-bench ANTHROPIC_BASE_URL=http://127.0.0.1:18080 \
    ANTHROPIC_API_KEY=x GENAI_BASE_URL=http://127.0.0.1:18080 GENAI_API_KEY=x \
    setsid bash -c 'echo $$ > "$0"; exec taskset -c 1 node dist/bin/model-gateway.js serve' "$work/pid-$name" >"$work/$name.log" 2>&1 </dev/null &)
  for _ in $(seq 1 120); do curl -s -o /dev/null "http://127.0.0.1:$port/healthz" && break; sleep 0.5; done
  [ -s "$work/pid-$name" ] || { echo "rig-pair: $name did not start; its log:" >&2; cat "$work/$name.log" >&2; exit 1; }
  PID=$(cat "$work/pid-$name"); pids+=("$PID")
  key=$(GW=http://127.0.0.1:$aport TOK=$tok node -e '
    const h = { authorization: "Bearer " + process.env.TOK, "content-type": "application/json" };
    const j = async (m, p, b) => (await fetch(process.env.GW + p, { method: m, headers: h, body: b && JSON.stringify(b) })).json();
    (async () => {
      const a = await j("POST", "/admin/v1/accounts", { name: "pair", tier: "bench" });
      await j("POST", `/admin/v1/accounts/${a.id}/credits`, { amount: "1000000.00" });
      console.log((await j("POST", `/admin/v1/accounts/${a.id}/keys`, { name: "pair" })).key);
    })().catch((e) => { console.log("ERR " + e.message) })')
  case "$key" in sk-*) ;; *) echo "rig-pair: $name did not start ($key); its log: $work/$name.log" >&2; cat "$work/$name.log" >&2; exit 1 ;; esac
  PORT=$port KEY=$key
}
start "$A_DIR" "$A"; pa=$PORT ka=$KEY pida=$PID
start "$B_DIR" "$B"; pb=$PORT kb=$KEY pidb=$PID

(cd "$work/rig" && BENCH_MODEL=${BENCH_MODEL:-openai/gpt-4o-mini} ./run-bench.sh \
  --target "http://127.0.0.1:$pa" --auth "Bearer $ka" --name "$A" --pid "$pida" \
  --target2 "http://127.0.0.1:$pb" --target2-name "$B" --target2-header "authorization: Bearer $kb" --target2-pid "$pidb" \
  --configs "fastify,$A,$B" "$@")

node - "$(ls -d "$work"/rig/results/*/ | head -1)results.json" <<'JS'
const j = require(process.argv[2])
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2 }
const names = j.options.configs.filter((c) => c !== 'fastify')
for (const sc of j.options.scenarios) {
  const cells = names.map((name) => {
    const rounds = [...new Set(j.runs.map((r) => r.round))].map((round) => {
      const at = (cfg) => j.runs.find((r) => r.round === round && r.scenario === sc && r.config === cfg)
      const g = at(name); const f = at('fastify')
      if (g.errors || f.errors) console.log(`err in round ${round}, ${sc}, ${name}`)
      return { ratio: g.rps / f.rps, cpu: (g.proxy_cpu_pct / g.rps) / (f.proxy_cpu_pct / f.rps) }
    })
    return `${name} ${median(rounds.map((r) => r.ratio)).toFixed(3)} (${rounds.map((r) => r.ratio.toFixed(2)).join(', ')}), CPU ${median(rounds.map((r) => r.cpu)).toFixed(2)}x`
  })
  console.log(`${sc}: ${cells.join(' | ')}`)
}
JS
