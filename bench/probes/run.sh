#!/usr/bin/env bash
# The schema probes: WAL and server-backend CPU per job for the drain (claim of 1,000 + its
# acknowledgement), the bulk enqueue, a heartbeat and the VACUUM that follows a drain, for the
# previous layout (commit $OLD_COMMIT, tables in public) and this tree's (schema leasehold), each
# in a scratch database of its own on one PostgreSQL server. README.md says what is measured.
#
#   bash bench/probes/run.sh                 # 3 repeats, 127.0.0.1:5432 as postgres
#   REPEATS=5 PGHOST=… PGPORT=… PGUSER=… bash bench/probes/run.sh
#
# Needs psql and a server on this machine (backend CPU is read from /proc/<pid>/schedstat), the
# pg_walinspect extension (PostgreSQL 15+; contrib), git (to export the old tree) and npx tsx.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
export PGHOST=${PGHOST:-127.0.0.1} PGPORT=${PGPORT:-5432} PGUSER=${PGUSER:-postgres}
OLD_COMMIT=${OLD_COMMIT:-3ede191}
REPEATS=${REPEATS:-3}
JOBS=100000
PAIRS=20 # claims of 1,000 + acknowledgements per drain (20,000 jobs)
OUT=${PROBE_OUT:-$ROOT/.leasehold/probes}
WORK=$OUT/work
RESULTS=$OUT/results.tsv
# LAYOUTS="v1" measures one layout; V1_SQL is run in the new layout's database after its
# migrations (a variant: an index dropped, a trigger replaced…).
read -r -a LAYOUTS <<<"${LAYOUTS:-v0 v1}"
V1_SQL=${V1_SQL:-}
declare -A DB=([v0]=leasehold_probe_v0 [v1]=leasehold_probe_v1)
declare -A JOBS_TABLE=([v0]=public.jobs [v1]=leasehold.jobs)
declare -A TRUNCATE=(
  [v0]='TRUNCATE jobs, job_attempts'
  [v1]='TRUNCATE leasehold.jobs, leasehold.ready_jobs, leasehold.leases, leasehold.finished_rollup, leasehold.job_attempts'
)
# OLD_SCHEMA=leasehold: the old commit is schema v1 too (its tables in schema leasehold).
if [ "${OLD_SCHEMA:-public}" = leasehold ]; then JOBS_TABLE[v0]=${JOBS_TABLE[v1]} TRUNCATE[v0]=${TRUNCATE[v1]}; fi

log() { echo "[probes] $*" >&2; }
q() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$1" -c "$2" 2>>"$OUT/errors.log" || { tail -3 "$OUT/errors.log" >&2; return 1; }; }
lsn() { q postgres 'SELECT pg_current_wal_insert_lsn()'; }

rm -rf "$WORK" "$OUT/wal" "$OUT/plans" "$OUT/errors.log" && mkdir -p "$WORK" "$OUT/sql" "$OUT/wal" "$OUT/plans"
log "server: $(q postgres 'SELECT version()')"
log "settings: $(q postgres "SELECT string_agg(name || '=' || setting, ' ' ORDER BY name) FROM pg_settings WHERE name IN ('autovacuum', 'checkpoint_timeout', 'data_checksums', 'fsync', 'full_page_writes', 'max_wal_size', 'shared_buffers', 'synchronous_commit', 'wal_compression')")"

# 1. The statements each layout's library sends (bench/probes/statements.ts), from the old
#    commit's own db/ (exported under .leasehold, where this tree's node_modules resolve) and
#    from this tree.
TREE=$ROOT/.leasehold/probes/tree-$OLD_COMMIT
rm -rf "$TREE" && mkdir -p "$TREE"
git archive "$OLD_COMMIT" db | tar -x -C "$TREE"
npx tsx bench/probes/statements.ts --tree "$TREE" --out "$OUT/sql/v0" --jobs $JOBS
npx tsx bench/probes/statements.ts --tree "$ROOT" --out "$OUT/sql/v1" --jobs $JOBS

# 2. One scratch database per layout, built from that layout's migrations.
for layout in "${LAYOUTS[@]}"; do
  db=${DB[$layout]}
  q postgres "DROP DATABASE IF EXISTS $db" && q postgres "CREATE DATABASE $db"
  if [ "$layout" = v0 ]; then
    for f in $(git ls-tree --name-only "$OLD_COMMIT" drizzle/ | grep '\.sql$' | sort); do
      git show "$OLD_COMMIT:$f" | psql -X -q -v ON_ERROR_STOP=1 -d "$db" >/dev/null
    done
  else
    for f in $(ls drizzle/*.sql | sort); do psql -X -q -v ON_ERROR_STOP=1 -d "$db" -f "$f" >/dev/null; done
    if [ -n "$V1_SQL" ]; then log "variant: $V1_SQL" && q "$db" "$V1_SQL"; fi
  fi
  q "$db" 'CREATE EXTENSION IF NOT EXISTS pg_walinspect' >/dev/null
done

# A psql session's own CPU (ns, from schedstat) and the wall clock (ns), into file $1.
stamp() { echo "\\! echo \$(cut -d' ' -f1 /proc/\$PID/schedstat) \$(date +%s%N) > $1"; }
session_head() {
  echo '\set ON_ERROR_STOP 1'
  echo 'SET plan_cache_mode = force_generic_plan;'
  echo "\\i $OUT/sql/$1/prepare.sql"
  echo 'SELECT pg_backend_pid() AS pid \gset'
  echo '\setenv PID :pid'
}
# The claim's parameters after the first five (a claim by kind: its kind and version).
claim_args() { cat "$OUT/sql/$1/claim-args.txt" 2>/dev/null || true; }
token() { printf '%08x-0000-4000-8000-%012x' "$1" "$2"; }

# Drain session $2 of layout $1: $3 pairs of claim($4, default 1000) + acknowledgement.
drain_sql() {
  local layout=$1 s=$2 pairs=$3 limit=${4:-1000} p tok
  session_head "$layout"
  stamp "$WORK/drain.$s.0"
  for p in $(seq 1 "$pairs"); do
    tok=$(token "$s" "$p")
    # The claim's own share (the stamps cost the backend nothing: it waits meanwhile).
    stamp "$WORK/claim.$s-$p.0"
    echo "EXECUTE claimids('bench', $limit, '$tok', 30, 'probe-host:1234:session-$s'$(claim_args "$layout")) \\gset"
    stamp "$WORK/claim.$s-$p.1"
    echo "EXECUTE ack(:'ids', '$tok') \\gset"
    echo '\echo lost :lost'
  done
  stamp "$WORK/drain.$s.1"
}

# One claim of 1,000, then three heartbeats of all of them (each moves the deadline), then the
# acknowledgement; the heartbeats measured one by one (in the session: it is the only writer).
# $2 names the steps ($2$i), $3 the session's tokens; the heartbeat's plan (as it runs: custom
# when the library sends it unnamed) goes to $4.
heartbeat_sql() {
  local layout=$1 step=$2 tok i
  tok=$(token "$3" 1)
  session_head "$layout"
  echo "EXECUTE claimids('bench', 1000, '$tok', 30, 'probe-host:1234:heartbeat'$(claim_args "$layout")) \\gset"
  echo "SELECT array_fill('$tok'::uuid, ARRAY[1000])::text AS toks \\gset"
  echo "\\o $4"
  echo '\set lease 60'
  sed 's/^EXECUTE/EXPLAIN (COSTS OFF) EXECUTE/; s/ \\g \/dev\/null/;/' "$OUT/sql/$layout/heartbeat.sql"
  echo '\o'
  for i in 1 2 3; do
    echo "\\set lease $((30 + 30 * i))"
    echo 'SELECT pg_current_wal_insert_lsn() AS l0 \gset'
    stamp "$WORK/$step$i.0"
    cat "$OUT/sql/$layout/heartbeat.sql"
    stamp "$WORK/$step$i.1"
    echo "SELECT pg_current_wal_insert_lsn() AS l1, pg_wal_lsn_diff(pg_current_wal_insert_lsn(), :'l0')::bigint AS wal \\gset"
    echo "\\echo WAL $step$i :l0 :l1 :wal"
  done
  echo "EXECUTE ack(:'ids', '$tok') \\gset"
}

# Runs heartbeat_sql's session for layout $1 and records its three steps.
heartbeats() {
  local layout=$1 sessions=$2 r=$3 step=$4 tokens=$5 tag=$6 i l0 l1 wal
  heartbeat_sql "$layout" "$step" "$tokens" "$OUT/plans/$layout-$step.txt" >"$WORK/$step.sql"
  psql -X -q -d "${DB[$layout]}" -f "$WORK/$step.sql" >"$WORK/$step.out"
  for i in 1 2 3; do
    read -r _ _ l0 l1 wal < <(grep "^WAL $step$i " "$WORK/$step.out")
    record "$layout" "$sessions" "$r" "$step$i" 1000 \
      "$(cpu_of "$WORK/$step$i".[01]) $wal $(wal_detail "$layout" "$tag-$step$i" "$l0" "$l1" 1000)"
  done
}

# CPU (sum of the sessions' deltas, ns) and wall span (first start to last end, ns) of stamp files.
cpu_of() {
  awk '{ if (FILENAME ~ /\.0$/) { c -= $1; if (s == "" || $2 < s) s = $2 } else { c += $1; if ($2 > e) e = $2 } }
       END { printf "%d %d\n", c, e - s }' "$@"
}

# The WAL between two LSNs, read back with pg_walinspect and kept only where it is this
# database's: records that name its blocks, and block-less records (commits) of transactions
# that wrote such records. Writes the window's records by relation and record type (bytes
# without full-page images) and prints "fpi_bytes other_bytes": this database's full-page
# images (a checkpoint began in the window) and the bytes of the window that are not this
# database's (other databases on the shared server, the server's own records).
wal_detail() {
  local layout=$1 tag=$2 l0=$3 l1=$4 jobs=$5 db=${DB[$1]}
  # A commit that wrote WAL flushes all before it, so the window is readable (VACUUM's own WAL
  # and a commit that wrote none are not flushed when they end).
  q "$db" 'CREATE TEMP TABLE wal_flush ()'
  psql -X -q -At -v ON_ERROR_STOP=1 -d "$db" 2>>"$OUT/errors.log" <<SQL || { tail -3 "$OUT/errors.log" >&2; return 1; }
CREATE TEMP TABLE r AS
  SELECT xid::text::bigint AS xid, resource_manager || '/' || record_type AS rec, record_length, fpi_length,
         (regexp_match(block_ref, 'rel (\d+)/(\d+)/(\d+)'))::oid[] AS rel
  FROM pg_get_wal_records_info('$l0', '$l1');
CREATE TEMP TABLE c AS
  WITH me AS (SELECT oid FROM pg_database WHERE datname = current_database()),
       ours AS (SELECT DISTINCT xid FROM r, me WHERE r.rel[2] = me.oid AND r.xid <> 0)
  SELECT r.rec, r.record_length, r.fpi_length,
         CASE WHEN r.rel[2] = me.oid
                THEN coalesce(pg_filenode_relation(CASE WHEN r.rel[1] = 1663 THEN 0 ELSE r.rel[1] END, r.rel[3])::text,
                              '(relfilenode ' || r.rel[3] || ')')
              WHEN r.rel IS NULL AND r.xid IN (SELECT xid FROM ours) THEN '(no block)' END AS relation
  FROM r, me;
\o $OUT/wal/$tag.relations.tsv
SELECT relation, rec, round(count(*) / $jobs.0, 3), round(sum(record_length - fpi_length) / $jobs.0, 1)
FROM c WHERE relation IS NOT NULL GROUP BY 1, 2 ORDER BY 4 DESC;
\o
SELECT coalesce(sum(fpi_length) FILTER (WHERE relation IS NOT NULL), 0) || ' ' ||
       (pg_wal_lsn_diff('$l1', '$l0') - coalesce(sum(record_length) FILTER (WHERE relation IS NOT NULL), 0))::bigint
FROM c;
SQL
}

# One measurement: layout, sessions, repeat, step, jobs, then the line's figures.
# (with the 1-minute load average of the machine: others' work slows the backends, CPU time too)
record() {
  [ $# = 6 ] && [ "$(echo "$6" | wc -w)" = 5 ] || { log "incomplete figures for $*"; exit 1; }
  echo "$* $(cut -d' ' -f1 /proc/loadavg)" >>"$RESULTS"
}

echo 'layout sessions repeat step jobs cpu_ns wall_ns wal_bytes fpi_bytes other_bytes load1' >"$RESULTS"

# A physical replication slot keeps the WAL of each run until its records are read (another
# client's CHECKPOINT would otherwise recycle the segments of a window before wal_detail reads it).
SLOT=leasehold_probe
drop_slot() { q postgres "SELECT pg_drop_replication_slot('$SLOT') FROM pg_replication_slots WHERE slot_name = '$SLOT'" >/dev/null; }
trap drop_slot EXIT

run_one() {
  local layout=$1 sessions=$2 r=$3 db=${DB[$1]} tag l0 l1 s pairs lost done holder
  tag="$layout-${sessions}s-r$r"
  log "$tag"
  q "$db" 'CHECKPOINT'
  drop_slot
  q postgres "SELECT pg_create_physical_replication_slot('$SLOT', true)" >/dev/null
  q "$db" "${TRUNCATE[$layout]}"

  # Enqueue: the library's bulk statement for 100,000 jobs (streams into jobs; in v1 the
  # statement trigger writes the ready rows).
  { session_head "$layout"; stamp "$WORK/enq.0"; echo "\\i $OUT/sql/$layout/enqueue.sql"; stamp "$WORK/enq.1"; } \
    >"$WORK/enq.sql"
  l0=$(lsn)
  psql -X -q -d "$db" -f "$WORK/enq.sql" >/dev/null
  l1=$(lsn)
  record "$layout" "$sessions" "$r" enqueue $JOBS \
    "$(cpu_of "$WORK"/enq.[01]) $(q postgres "SELECT pg_wal_lsn_diff('$l1', '$l0')::bigint") $(wal_detail "$layout" "$tag-enqueue" "$l0" "$l1" $JOBS)"
  q "$db" 'VACUUM ANALYZE' # as a drained table would be; hint bits and statistics set outside the window

  if [ "$r" = 1 ] && [ "$sessions" = 1 ]; then
    { session_head "$layout"; echo "EXPLAIN (COSTS OFF) EXECUTE claimids('bench', 1000, '$(token 0 0)', 30, 'probe'$(claim_args "$layout"));"; \
      echo "EXPLAIN (COSTS OFF) EXECUTE ack('{}', '$(token 0 0)');"; } >"$WORK/plan.sql"
    psql -X -q -d "$db" -f "$WORK/plan.sql" >"$OUT/plans/$layout.txt"
  fi

  # The drain: $PAIRS claims of 1,000 and their acknowledgements, in 1 or 4 sessions at once.
  pairs=$((PAIRS / sessions))
  for s in $(seq 1 "$sessions"); do drain_sql "$layout" "$s" "$pairs" >"$WORK/drain-$s.sql"; done
  l0=$(lsn)
  for s in $(seq 1 "$sessions"); do psql -X -q -d "$db" -f "$WORK/drain-$s.sql" >"$WORK/drain-$s.out" 2>&1 & done
  wait
  l1=$(lsn)
  lost=$(cat "$WORK"/drain-*.out | awk '/^lost/ { n += $2 } !/^lost/ { bad = 1; print > "/dev/stderr" } END { print bad ? -1 : n }')
  done=$(q "$db" "SELECT count(*) FROM ${JOBS_TABLE[$layout]} WHERE state = 'done'")
  if [ "$lost" != 0 ] || [ "$done" != $((PAIRS * 1000)) ]; then
    log "$tag: the drain did not complete every job (done $done, lost $lost)"
    exit 1
  fi
  record "$layout" "$sessions" "$r" drain $((PAIRS * 1000)) \
    "$(cpu_of "$WORK"/drain.*.[01]) $(q postgres "SELECT pg_wal_lsn_diff('$l1', '$l0')::bigint") $(wal_detail "$layout" "$tag-drain" "$l0" "$l1" $((PAIRS * 1000)))"
  # The claims' share of the drain's CPU (their wall span is not meaningful: summed, not spanned).
  record "$layout" "$sessions" "$r" claims $((PAIRS * 1000)) "$(cpu_of "$WORK"/claim.*.[01] | cut -d' ' -f1) 0 0 0 0"
  rm -f "$WORK"/drain.* "$WORK"/claim.*

  [ "$sessions" = 1 ] || return 0
  # Pickup: 200 claims of one job, each acknowledged (a worker at low load starts jobs so), one
  # session (numbered 9 for its tokens).
  drain_sql "$layout" 9 200 1 >"$WORK/pickup.sql"
  l0=$(lsn)
  psql -X -q -d "$db" -f "$WORK/pickup.sql" >"$WORK/pickup.out" 2>&1
  l1=$(lsn)
  lost=$(awk '/^lost/ { n += $2 } !/^lost/ { bad = 1; print > "/dev/stderr" } END { print bad ? -1 : n }' "$WORK/pickup.out")
  [ "$lost" = 0 ] || { log "$tag: the pickup did not complete every job (lost $lost)"; exit 1; }
  record "$layout" "$sessions" "$r" pickup 200 \
    "$(cpu_of "$WORK"/drain.9.[01]) $(q postgres "SELECT pg_wal_lsn_diff('$l1', '$l0')::bigint") $(wal_detail "$layout" "$tag-pickup" "$l0" "$l1" 200)"
  rm -f "$WORK"/drain.* "$WORK"/claim.*

  # Heartbeats of 1,000 running jobs, three in a row; then the same while another session of
  # the database holds a transaction open that has an xid (an application's, a report's): the
  # versions the heartbeats leave behind can then not be pruned, so what a page holds is what
  # its fillfactor reserved.
  heartbeats "$layout" "$sessions" "$r" heartbeat 99 "$tag"
  PGAPPNAME=leasehold-probe-holder psql -X -q -d "$db" \
    -c 'BEGIN' -c 'SELECT txid_current()' -c 'SELECT pg_sleep(600)' >/dev/null 2>&1 &
  holder=$!
  until [ "$(q "$db" "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'leasehold-probe-holder' AND backend_xid IS NOT NULL")" = 1 ]; do
    sleep 0.1
  done
  heartbeats "$layout" "$sessions" "$r" held 98 "$tag"
  q "$db" "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'leasehold-probe-holder'" >/dev/null
  wait "$holder" || true

  # The VACUUM a drain leaves to do (dead versions, dead ready rows and leases, index entries),
  # per drained job (the 22,200 jobs above).
  { session_head "$layout"; stamp "$WORK/vac.0"; echo 'VACUUM;'; stamp "$WORK/vac.1"; } >"$WORK/vac.sql"
  l0=$(lsn)
  psql -X -q -d "$db" -f "$WORK/vac.sql" >/dev/null
  l1=$(lsn)
  record "$layout" "$sessions" "$r" vacuum $((PAIRS * 1000 + 2200)) \
    "$(cpu_of "$WORK"/vac.[01]) $(q postgres "SELECT pg_wal_lsn_diff('$l1', '$l0')::bigint") $(wal_detail "$layout" "$tag-vacuum" "$l0" "$l1" $((PAIRS * 1000 + 2200)))"
}

for r in $(seq 1 "$REPEATS"); do
  for sessions in 1 4; do
    for layout in "${LAYOUTS[@]}"; do run_one "$layout" "$sessions" "$r"; done
  done
done

for layout in "${LAYOUTS[@]}"; do q postgres "DROP DATABASE ${DB[$layout]}"; done
npx tsx bench/probes/summarize.ts "$OUT"
