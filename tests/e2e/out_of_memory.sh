#!/usr/bin/env bash
# Memory running out (ulimit -v in a subshell) ends the run cleanly: exit 2, one message that
# says what ran out and how to narrow the sweep, no crash (the simulator once kept a half-built
# schedule after std::bad_alloc and the next candidate crashed on it), nothing written, and
# under mpirun every rank ends.
source "$SOURCE_DIR/tests/e2e/_lib.sh"
# Runs CMD under a virtual-memory limit of $1 KiB; rc, out.txt and err.txt as expect_rc.
limited() {
  local kib=$1; shift
  set +e; (ulimit -v "$kib"; exec "$@") >out.txt 2>err.txt; rc=$?; set -e
}
check_clean() {
  local what=$1
  echo "--- $what: rc $rc"; head -c 600 err.txt; echo
  [ "$rc" = 2 ] && ok "$what: exit 2" || bad "$what: exit $rc (want 2)"
  grep -q "^ppsearch: out of memory while .* candidates): narrow the sweep" err.txt &&
    ok "$what: out-of-memory message" || bad "$what: no out-of-memory message"
  [ "$(grep -c '^ppsearch: ' err.txt)" = 1 ] && ok "$what: one message" || bad "$what: not one message"
  if grep -qiE "segmentation fault|signal|internal error|core dumped" err.txt; then
    bad "$what: crash or internal error"
  else
    ok "$what: no crash"
  fi
  [ -z "$(ls | grep '^oom.h5' || true)" ] && ok "$what: nothing written" || bad "$what: $(ls | grep '^oom.h5')"
}
# 943047 candidates (over the default sweep budget, so the budget is raised). 450 MB runs out while the candidates are dealt, 1 GB in the
# evaluation (where the crash was).
for kib in 450000 1000000; do
  rm -f oom.h5*
  limited $kib "$PPSEARCH" --gpus 1:65536 --max-candidates 1000000 --threads 2 --quiet --overwrite --output oom.h5
  check_clean "serial, $kib KiB"
done
rm -f oom.h5*
limited 700000 "$MPIEXEC" -n 2 --bind-to none "$PPSEARCH" --gpus 1:65536 --max-candidates 1000000 --threads 1 --quiet \
  --overwrite --output oom.h5
check_clean "2 ranks, 700000 KiB each"
finish
