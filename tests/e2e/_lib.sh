# Shared helpers for the end-to-end scripts (sourced, not a test).
set -euo pipefail
: "${PPSEARCH:?path of the ppsearch binary}"
: "${SOURCE_DIR:?}"
PY=/usr/bin/python3
H5CHECK="$SOURCE_DIR/tests/e2e/h5check.py"
MPIEXEC=${MPIEXEC:-mpiexec}
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok: $*"; }
bad() { failed=$((failed + 1)); echo "FAILED: $*" >&2; }
# expect_rc WANT CMD...: run CMD, capture stdout/stderr in out.txt/err.txt, check the exit code.
expect_rc() {
  local want=$1; shift
  set +e; "$@" >out.txt 2>err.txt; local rc=$?; set -e
  if [ "$rc" = "$want" ]; then ok "rc $rc: $*"; else bad "rc $rc (want $want): $*"; cat err.txt >&2; fi
}
# expect_stderr TEXT: err.txt has exactly this line.
expect_stderr() {
  if grep -qxF -- "$1" err.txt; then ok "message: $1"; else bad "message missing: $1"; echo "--- got:" >&2; cat err.txt >&2; fi
}
finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" = 0 ]
}
