#!/usr/bin/env bash
# Output safety (docs/results.md, "Output safety"): ppsearch and ppsearch-validate write only
# regular files. A device node, FIFO, socket, directory or symbolic link at the output name is
# refused with exit 2 and a message naming --output and the path, with or without --overwrite,
# and is left exactly as it was. Temporary files live in a private random folder next to the
# output (never PATH.tmp-<pid>), are removed on SIGTERM/SIGINT, and concurrent runs keep their
# own results. Device nodes are private copies made here (mknod), never the system's.
source "$SOURCE_DIR/tests/e2e/_lib.sh"
: "${PPSEARCH_VALIDATE:?path of the ppsearch-validate binary}"
RUNS="$SOURCE_DIR/tests/validation/runs-public.csv"
rm -rf t && mkdir t
t=$PWD/t

# node_id PATH: file type, device numbers, inode and link target, as lstat sees them.
node_id() { stat -c '%F %t:%T %i' -- "$1"; [ -L "$1" ] && readlink -- "$1" || true; }
# no_leftovers DIR: no temporary folder or file of ours (or of the old scheme) in DIR.
no_leftovers() {
  local left
  left=$(ls -A "$1" | grep -E 'ppsearch-tmp|\.tmp-' || true)
  [ -z "$left" ] && ok "no temporary leftovers in $1" || bad "leftovers in $1: $left"
}

# wait_for_run DIR COUNT: until COUNT runs have made their temporary folder in DIR (they make it
# before the search starts), at most 20 s; then the search is under way.
wait_for_run() {
  local i
  for i in $(seq 200); do
    [ "$(ls -A "$1" | grep -c ppsearch-tmp || true)" -ge "$2" ] && return 0
    sleep 0.1
  done
  echo "note: no temporary folder in $1 after 20 s" >&2
}

# ---- every kind of non-regular target ----------------------------------------------------------
kinds=()
if mknod "$t/null" c 1 3 2>/dev/null; then kinds+=(null); else echo "note: mknod not allowed, no device nodes"; fi
if mknod "$t/full" c 1 7 2>/dev/null; then kinds+=(full); fi
mkfifo "$t/fifo" && kinds+=(fifo)
if "$PY" -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$t/sock"; then kinds+=(sock); fi
mkdir "$t/folder" && kinds+=(folder)
echo precious > "$t/regular.h5"
ln -s regular.h5 "$t/link" && kinds+=(link)
ln -s nowhere.h5 "$t/dangling" && kinds+=(dangling)
[ -e "$t/null" ] && [ "$(stat -c '%F %t:%T' "$t/null")" = "character special file 1:3" ] \
  && ok "private null node is c 1 3" || echo "note: no private null node"

for k in "${kinds[@]}"; do
  before=$(node_id "$t/$k")
  for ow in "" --overwrite; do
    expect_rc 2 "$PPSEARCH" --gpus 128 --quiet --output "$t/$k" $ow
    grep -qF -- "--output: output = $t/$k: " err.txt && ok "ppsearch message names --output and $k" \
      || { bad "ppsearch message for $k"; cat err.txt >&2; }
    expect_rc 2 "$PPSEARCH_VALIDATE" "$RUNS" --quiet --output "$t/$k" $ow
    grep -qF -- "--output: output = $t/$k: " err.txt && ok "validate message names --output and $k" \
      || { bad "validate message for $k"; cat err.txt >&2; }
  done
  [ "$(node_id "$t/$k")" = "$before" ] && ok "$k unchanged ($before)" || bad "$k changed: $before -> $(node_id "$t/$k")"
done
if [ -e "$t/null" ]; then
  expect_rc 2 "$PPSEARCH" --gpus 128 --quiet --output "$t/null" --overwrite
  grep -q "is a character device" err.txt && ok "says what the node is" || bad "no 'character device' in the message"
fi
[ "$(cat "$t/regular.h5")" = precious ] && ok "link target untouched" || bad "link target changed"
no_leftovers "$t"

# ---- a folder: says it is a directory -----------------------------------------------------------
expect_rc 2 "$PPSEARCH" --gpus 128 --quiet --output "$t/folder"
grep -q "is a directory" err.txt && ok "directory named as such" || bad "directory message"
expect_rc 2 "$PPSEARCH" --gpus 128 --quiet --output "$t/newfolder/"
[ ! -e "$t/newfolder" ] && ok "nothing created for a folder name" || bad "folder created"

# ---- links planted at the names the old scheme used (PATH.tmp-<pid>) stay untouched --------------
mkdir -p "$t/plant"
echo victim > "$t/plant/victim"
# The next pids the shell will hand out, and pid 1 (another container's).
for p in 1 $(seq $(($$ + 1)) $(($$ + 40))); do ln -s victim "$t/plant/out.h5.tmp-$p"; done
expect_rc 0 "$PPSEARCH" --gpus 128 --quiet --output "$t/plant/out.h5"
[ "$(cat "$t/plant/victim")" = victim ] && ok "victim file untouched" || bad "victim file written"
[ -f "$t/plant/out.h5" ] && [ ! -L "$t/plant/out.h5" ] && ok "output is a regular file" || bad "output is a link"
[ "$(find "$t/plant" -maxdepth 1 -type l -name 'out.h5.tmp-*' -lname victim | wc -l)" = 41 ] \
  && ok "planted links untouched" || bad "planted links changed"
"$PY" "$H5CHECK" "$t/plant/out.h5" >/dev/null && ok "output valid" || bad "output invalid"

# ---- concurrent runs: own files, own content ----------------------------------------------------
mkdir -p "$t/conc"
"$PPSEARCH" --gpus 64 --quiet --output "$t/conc/a.h5" 2>a.err & pa=$!
"$PPSEARCH" --gpus 256 --quiet --output "$t/conc/b.h5" 2>b.err & pb=$!
wait $pa && wait $pb && ok "two runs to two outputs" || bad "concurrent runs failed"
"$PY" "$H5CHECK" "$t/conc/a.h5" --find gpus=64 >/dev/null && ok "a.h5 has its own rows" || bad "a.h5 rows"
"$PY" "$H5CHECK" "$t/conc/b.h5" --find gpus=256 >/dev/null && ok "b.h5 has its own rows" || bad "b.h5 rows"
"$PPSEARCH" --gpus 64 --quiet --output "$t/conc/same.h5" --overwrite 2>c.err & pa=$!
"$PPSEARCH" --gpus 256 --quiet --output "$t/conc/same.h5" --overwrite 2>d.err & pb=$!
wait $pa && wait $pb && ok "two runs to one output with --overwrite" || bad "concurrent --overwrite runs failed"
if "$PY" "$H5CHECK" "$t/conc/same.h5" --find gpus=64 >/dev/null 2>&1; then
  ! "$PY" "$H5CHECK" "$t/conc/same.h5" --find gpus=256 >/dev/null 2>&1 && ok "same.h5 is one run's" || bad "same.h5 mixed"
else
  "$PY" "$H5CHECK" "$t/conc/same.h5" --find gpus=256 >/dev/null && ok "same.h5 is one run's" || bad "same.h5 is neither run's"
fi
no_leftovers "$t/conc"

# ---- signals: no temporary files, no final file, an old file untouched ----------------------------
mkdir -p "$t/sig"
for sig in TERM INT; do
  # --default-signal: a background job of a script would otherwise start with SIGINT ignored.
  env --default-signal=INT "$PPSEARCH" --gpus 64:1024 --model llama3-405b --quiet \
    --output "$t/sig/new-$sig.h5" 2>/dev/null & p=$!
  wait_for_run "$t/sig" 1
  sleep 0.2
  kill -$sig $p
  set +e; wait $p; rc=$?; set -e
  [ "$rc" -gt 128 ] && ok "SIG$sig ended the run (rc $rc)" || bad "SIG$sig: rc $rc (the run finished first?)"
  [ ! -e "$t/sig/new-$sig.h5" ] && ok "SIG$sig: no final file" || bad "SIG$sig: final file written"
  echo old > "$t/sig/old-$sig.h5"
  env --default-signal=INT "$PPSEARCH" --gpus 64:1024 --model llama3-405b --quiet --overwrite \
    --output "$t/sig/old-$sig.h5" 2>/dev/null & p=$!
  wait_for_run "$t/sig" 1
  sleep 0.2
  kill -$sig $p
  set +e; wait $p; set -e
  [ "$(cat "$t/sig/old-$sig.h5")" = old ] && ok "SIG$sig: old file untouched" || bad "SIG$sig: old file replaced"
done
no_leftovers "$t/sig"

# ---- the output name changes during the search: refused at the end, exit 2 ----------------------
# With --overwrite it becomes a FIFO; without, a regular file appears. Both runs at once.
mkdir -p "$t/race"
"$PPSEARCH" --gpus 64:1024 --model llama3-405b --quiet --output "$t/race/fifo.h5" --overwrite \
  >/dev/null 2>race1.err & p1=$!
"$PPSEARCH" --gpus 64:1024 --model llama3-405b --quiet --output "$t/race/file.h5" \
  >/dev/null 2>race2.err & p2=$!
wait_for_run "$t/race" 2
mkfifo "$t/race/fifo.h5"
echo "someone else's" > "$t/race/file.h5"
set +e; wait $p1; rc1=$?; wait $p2; rc2=$?; set -e
[ "$rc1" = 2 ] && ok "output that became a FIFO: exit 2" || { bad "FIFO race: rc $rc1"; cat race1.err >&2; }
grep -q "became a FIFO" race1.err && ok "message says what it became" || { bad "race message"; cat race1.err >&2; }
[ -p "$t/race/fifo.h5" ] && ok "FIFO left as it is" || bad "FIFO replaced"
[ "$rc2" = 2 ] && ok "file that appeared: exit 2" || { bad "file race: rc $rc2"; cat race2.err >&2; }
grep -q "appeared while the results were computed" race2.err && ok "message says it appeared" \
  || { bad "appeared message"; cat race2.err >&2; }
[ "$(cat "$t/race/file.h5")" = "someone else's" ] && ok "appeared file untouched" || bad "appeared file replaced"
no_leftovers "$t/race"
finish
