#!/usr/bin/env bash
# Every class of bad input: exit code 2 with the exact message, nothing written; no feasible
# configuration: exit 3 with the file written; unwritable output: exit 4.
source "$SOURCE_DIR/tests/e2e/_lib.sh"
rm -rf results out
mkdir -p out
# Unknown option value / bad list.
expect_rc 2 "$PPSEARCH" --gpus 128 --tp 3x
expect_stderr "ppsearch: error: --tp: search.tp = 3x: a comma list of at most 256 integers in [1, 131072], or auto"
# Missing --gpus.
expect_rc 2 "$PPSEARCH"
expect_stderr "ppsearch: error: --gpus: (missing): required, e.g. --gpus 128 or --gpus 64:1024"
# Empty range.
expect_rc 2 "$PPSEARCH" --gpus 64:32
expect_stderr "ppsearch: error: --gpus: search.gpus = 64:32: a range with START ≤ END"
# Unknown preset.
expect_rc 2 "$PPSEARCH" --gpus 128 --model llama3-71b
expect_stderr "ppsearch: error: --model: llama3-71b: a model preset (gpt3-13b, gpt3-175b, llama3-405b, llama3-70b, llama3-8b, nemotron4-15b, seed-gpt-48l) or an INI file path (did you mean llama3-70b?)"
# Missing file.
expect_rc 2 "$PPSEARCH" --gpus 128 --config ./nope.ini
expect_stderr "ppsearch: error: --config: ./nope.ini: an existing INI file (no such file) or a search preset (default)"
# Unknown key in a file, with file:line and a hint.
printf '[model]\nlayers = 80\nhiden_size = 8192\n' > typo.ini
expect_rc 2 "$PPSEARCH" --gpus 128 --config typo.ini
expect_stderr "ppsearch: error: typo.ini:3: model.hiden_size = 8192: unknown key (did you mean model.hidden_size?)"
# Bad value in a file.
printf '[model]\nhidden_size = abc\n' > badval.ini
expect_rc 2 "$PPSEARCH" --gpus 128 --config badval.ini
expect_stderr "ppsearch: error: badval.ini:2: model.hidden_size = abc: an integer in [1, 262144]"
# Bad --set.
expect_rc 2 "$PPSEARCH" --gpus 128 --set training.global_batch_size=-5
expect_stderr "ppsearch: error: --set: training.global_batch_size = -5: an integer in [1, 16777216]"
[ ! -e results ] && ok "nothing written on usage errors" || bad "results written on a usage error"
# Existing output is not overwritten without --overwrite.
echo keep > out/existing.h5
expect_rc 2 "$PPSEARCH" --gpus 128 --output out/existing.h5
expect_stderr "--output: output = out/existing.h5: the file exists; pass --overwrite to replace it"
[ "$(cat out/existing.h5)" = keep ] && ok "existing file untouched" || bad "existing file changed"
# No feasible configuration: exit 3, file written, reasons summarised.
expect_rc 3 "$PPSEARCH" --gpus 8 --model llama3-405b --output out/none.h5 --tp 8 --pp 1
grep -q "no feasible configuration" err.txt && ok "summary of reasons" || bad "no summary"
grep -q "memory: " err.txt && ok "memory reason counted" || bad "memory reason"
[ -f out/none.h5 ] && ok "file written on exit 3" || bad "file missing on exit 3"
"$PY" "$H5CHECK" out/none.h5 >/dev/null && ok "exit-3 file valid" || bad "exit-3 file invalid"
# Output error: a path under a regular file cannot be created.
expect_rc 4 "$PPSEARCH" --gpus 128 --output out/existing.h5/x.h5 --overwrite
grep -q "cannot" err.txt && ok "output error message" || bad "output error message"
finish
