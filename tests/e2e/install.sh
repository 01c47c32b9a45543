#!/usr/bin/env bash
# cmake --install, as a user runs it: the programs, the plot tool, presets, jobs, validation runs
# and docs land in the prefix (--prefix, and DESTDIR for packagers); the installed programs run
# from a folder outside the source tree with a plain PATH: --version, a tiny search (presets are
# compiled in), a search from an installed preset file, ppsearch-validate on the installed runs,
# ppsearch-plot --help (and the figures when matplotlib is there).
# Uses PPSEARCH_VALIDATE: the test is disabled until both programs are built.
source "$SOURCE_DIR/tests/e2e/_lib.sh"
: "${BUILD_DIR:?}"
CMAKE=${CMAKE:-cmake}
work=$PWD
rm -rf prefix dest run
mkdir -p run

# ---- 1. --prefix ----------------------------------------------------------------------------
expect_rc 0 "$CMAKE" --install "$BUILD_DIR" --prefix "$work/prefix"
P=$work/prefix
for f in bin/ppsearch bin/ppsearch-validate bin/ppsearch-plot; do
  [ -f "$P/$f" ] && [ -x "$P/$f" ] && ok "installed $f (executable)" || bad "missing or not executable: $f"
done
for f in share/ppsearch/configs/models/llama3-70b.ini share/ppsearch/configs/clusters/h200-16gpu-ib.ini \
         share/ppsearch/jobs/search-128-h200.sbatch share/ppsearch/jobs/README.md \
         share/ppsearch/validation/runs-public.csv share/doc/ppsearch/README.md \
         share/doc/ppsearch/results.md; do
  [ -s "$P/$f" ] && ok "installed $f" || bad "missing: $f"
done
diff -r "$SOURCE_DIR/configs" "$P/share/ppsearch/configs" >diff.txt &&
  ok "installed presets equal configs/" || { bad "installed presets differ"; cat diff.txt >&2; }

# The installed programs, from a folder outside the source and build trees, with a plain PATH:
# nothing may depend on the source tree or the build folder.
in_prefix() {  # in_prefix CMD...: run in $work/run with only the prefix and the system on PATH
  (cd "$work/run" && env -i HOME="$work/run" PATH="$P/bin:/usr/bin:/bin" OMP_NUM_THREADS=1 \
     MPLCONFIGDIR="$work/run/mplconfig" "$@")
}
want_version=$("$PPSEARCH" --version)
expect_rc 0 in_prefix ppsearch --version
[ "$(cat out.txt)" = "$want_version" ] && ok "installed --version: $want_version" ||
  bad "installed --version '$(cat out.txt)' != build's '$want_version'"
expect_rc 0 in_prefix ppsearch --gpus 64 --model llama3-8b --output tiny.h5 --quiet
expect_rc 0 "$PY" "$H5CHECK" run/tiny.h5 --expect-feasible-min 1
# The default output path, relative to where the user runs it.
expect_rc 0 in_prefix ppsearch --gpus 64 --model llama3-8b --top 1
[ -s run/results/llama3-8b_h200-16gpu-ib_64.h5 ] && ok "default output in ./results/" ||
  bad "no run/results/llama3-8b_h200-16gpu-ib_64.h5"
# A preset given as the installed file (PATH form) gives the same /candidates as the name.
expect_rc 0 in_prefix ppsearch --gpus 64 --model "$P/share/ppsearch/configs/models/llama3-8b.ini" \
  --output by_path.h5 --quiet
h1=$("$PY" "$H5CHECK" run/tiny.h5 --dump-candidates-hash | tail -1)
h2=$("$PY" "$H5CHECK" run/by_path.h5 --dump-candidates-hash | tail -1)
[ -n "$h1" ] && [ "$h1" = "$h2" ] && ok "installed preset file = compiled-in preset" ||
  bad "candidates differ: '$h1' vs '$h2'"
expect_rc 0 in_prefix ppsearch-validate "$P/share/ppsearch/validation/runs-public.csv" --quiet
expect_rc 0 in_prefix ppsearch-plot --help
grep -q "usage: ppsearch-plot" out.txt && ok "ppsearch-plot --help" || bad "no usage line"
if "$PY" -c 'import matplotlib, h5py' 2>/dev/null; then
  expect_rc 0 in_prefix ppsearch-plot tiny.h5
  n=$(find run/tiny_plots -name '*.png' -size +4k | wc -l)
  [ "$n" = 3 ] && ok "installed ppsearch-plot wrote 3 figures" || bad "$n figures in run/tiny_plots"
else
  echo "python3-matplotlib missing: installed ppsearch-plot not run on a file"
fi

# ---- 2. DESTDIR (packaging): everything under DESTDIR/usr/local, nothing elsewhere ----------
expect_rc 0 env DESTDIR="$work/dest" "$CMAKE" --install "$BUILD_DIR" --prefix /usr/local
[ -x dest/usr/local/bin/ppsearch ] && [ -s dest/usr/local/share/ppsearch/configs/models/llama3-8b.ini ] &&
  ok "DESTDIR install under dest/usr/local" || bad "DESTDIR install incomplete"
outside=$(find dest -mindepth 1 -maxdepth 2 ! -path dest/usr ! -path dest/usr/local | wc -l)
[ "$outside" = 0 ] && ok "nothing outside DESTDIR/usr/local" || bad "$outside entries outside dest/usr/local"
n_prefix=$(cd prefix && find . -type f | sort | md5sum)
n_dest=$(cd dest/usr/local && find . -type f | sort | md5sum)
[ "$n_prefix" = "$n_dest" ] && ok "same file list with --prefix and DESTDIR" || bad "file lists differ"

finish
