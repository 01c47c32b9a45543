#!/usr/bin/env bash
# Third-party headers stay where docs/architecture.md §3.3 puts them:
#   <mpi.h>            src/comm/mpi_communicator.cpp, src/comm/probe_mpi.cpp, tests/support/mpi_main.cpp
#   HDF5 / HighFive    src/io/*, tests/io/*
#   <boost/...>        src/io/*, src/cli/*, tests/io/*, tests/cli/*
#   <omp.h>, #pragma omp   src/runtime/*
#   public headers (include/ppsearch/**): std only, none of the above.
# The core (util spec cost partition schedule search validate) is also kept clean by its CMake target
# (it links nothing), but Boost headers and <omp.h> sit on the default include path, so only this
# check catches them there. Usage: check_includes.sh SOURCE_DIR. Prints file:line per violation.
set -uo pipefail
cd "${1:?source dir}" || exit 2

inc='^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]'
declare -A pattern=(
  [mpi]="${inc}mpi\.h[>\"]"
  [hdf5]="${inc}(hdf5[^/]*\.h|H5[A-Za-z]*\.h|highfive/)"
  [boost]="${inc}boost/"
  [openmp]="(${inc}omp\.h[>\"]|^[[:space:]]*#[[:space:]]*pragma[[:space:]]+omp)"
)
declare -A allowed=(
  [mpi]='^(src/comm/mpi_communicator\.cpp|src/comm/probe_mpi\.cpp|tests/support/mpi_main\.cpp)$'
  [hdf5]='^(src/io|tests/io)/'
  [boost]='^(src/io|src/cli|tests/io|tests/cli)/'
  [openmp]='^src/runtime/'
)

files=$(find include src tests bench -type f \( -name '*.hpp' -o -name '*.cpp' -o -name '*.h' \
          -o -name '*.hpp.in' \) 2>/dev/null | sort)
bad=0
for kind in mpi hdf5 boost openmp; do
  for f in $files; do
    [[ $f =~ ${allowed[$kind]} ]] && continue
    hits=$(grep -nE "${pattern[$kind]}" "$f") || continue
    while IFS= read -r hit; do
      echo "$f:${hit%%:*}: $kind header outside its allowed place: ${hit#*:}"
      bad=1
    done <<<"$hits"
  done
done
if [ "$bad" -ne 0 ]; then
  echo "FAILED: see docs/architecture.md §3.3 (rules for third-party headers)" >&2
  exit 1
fi
echo "third-party includes: OK ($(echo "$files" | grep -c . ) files checked)"
