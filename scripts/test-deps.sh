#!/usr/bin/env bash
# The Debian packages `npm test` needs besides npm's: Chromium (Playwright's e2e tests drive it,
# no browser download), PgBouncer 1.18 (db/pooler.test.ts and workers/pooler.test.ts start it,
# test/pgbouncer.ts), faketime (the failure harness's clock-skew scenario) and Prometheus (its
# promtool checks and unit-tests the alert rules: deploy/prometheus/rules.test.ts). `npm test`
# runs this first and .ci/run calls it: the missing ones are installed with apt when this runs
# as root; otherwise it stops at once (exit 1) with the one command that installs them.
#
# Where each is looked for: CHROMIUM_PATH (else /usr/bin/chromium), PGBOUNCER (else
# /usr/sbin/pgbouncer), FAKETIME (else /usr/bin/faketime), PROMTOOL (else /usr/bin/promtool), as
# the tests look for them.
# LEASEHOLD_TEST_DEPS_INSTALL=never never installs (it only says what is missing).
set -euo pipefail

missing=()
[ -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ] || missing+=(chromium)
[ -x "${PGBOUNCER:-/usr/sbin/pgbouncer}" ] || missing+=(pgbouncer)
[ -x "${FAKETIME:-/usr/bin/faketime}" ] || missing+=(faketime)
[ -x "${PROMTOOL:-/usr/bin/promtool}" ] || missing+=(prometheus)
[ ${#missing[@]} -eq 0 ] && exit 0

command="apt-get update && apt-get install -y ${missing[*]}"
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1 || [ "${LEASEHOLD_TEST_DEPS_INSTALL:-}" = never ]; then
  echo "npm test needs Debian's ${missing[*]} (Playwright e2e tests, PgBouncer tests, clock-skew scenario, alert rule tests)." >&2
  echo "Install them as root:  sudo sh -c '${command}'" >&2
  exit 1
fi
echo "== installing Debian ${missing[*]} (Playwright e2e tests, PgBouncer tests, clock-skew scenario, alert rule tests)"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${missing[@]}" >/dev/null
