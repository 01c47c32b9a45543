#!/usr/bin/env bash
# The design notes the code cites live in the repository (docs/), and every section a citation
# names exists there. Fails (exit 1, one file:line per problem) when a file
#   - cites algorithms.md, interface.md, environment.md or architecture.md by any path other
#     than docs/NAME.md (e.g. a bare name, design/NAME.md, ../shared/design/NAME.md), or
#   - refers to a folder outside the repository (shared/design, shared/spec, shared/validation), or
#   - cites docs/NAME.md with a section (§5.2, §1.3b, "§5.2, §8", §1–3, "section 6", "3.3") that
#     has no heading "#... 5.2 ..." in docs/NAME.md.
# Usage: doc_citations.sh SOURCE_DIR
set -uo pipefail
cd "${1:?usage: doc_citations.sh SOURCE_DIR}" || exit 2

docs=(algorithms interface environment architecture)
for d in "${docs[@]}"; do
  [[ -f docs/$d.md ]] || { echo "docs/$d.md: missing" >&2; exit 1; }
done

# Section numbers that have a heading, per doc: the first word after the #'s, trailing '.' cut.
declare -A have
for d in "${docs[@]}"; do
  have[$d]=" $(sed -nE 's/^#{1,6}[[:space:]]+([0-9]+(\.[0-9]+)*[a-z]?)\.?([[:space:]].*)?$/\1/p' \
    "docs/$d.md" | tr '\n' ' ') "
done

# Every text file of the project (build trees, results and VCS data excluded).
mapfile -t files < <(find . \( -type d \( -name .git -o -name 'build*' \) -o -path ./results \) -prune -o \
  -type f \( -name '*.md' -o -name '*.hpp' -o -name '*.cpp' -o -name '*.h' -o -name '*.in' \
  -o -name '*.txt' -o -name '*.cmake' -o -name '*.json' -o -name '*.ini' -o -name '*.sh' \
  -o -name '*.py' -o -name '*.sbatch' -o -name '*.csv' -o -path './.ci/*' \) -print |
  sed 's|^\./||' | sort)

bad=0
report() { echo "$1"; bad=1; }

name_re='(algorithms|interface|environment|architecture)\.md'
for f in "${files[@]}"; do
  [[ $f == tests/lint/doc_citations.sh ]] && continue
  # 1. Paths: every mention must be spelled docs/NAME.md.
  while IFS= read -r hit; do
    [[ -z $hit ]] && continue
    line=${hit%%:*}
    ref=${hit#*:}
    [[ $ref == docs/* && $ref != */docs/* ]] && continue
    report "$f:$line: '$ref' is not in the repository's docs/ (cite docs/${ref##*/})"
  done < <(grep -noE "[A-Za-z0-9_./-]*$name_re" "$f" 2>/dev/null)
  while IFS= read -r hit; do
    [[ -z $hit ]] && continue
    report "$f:${hit%%:*}: '${hit#*:}' is outside the repository"
  done < <(grep -noE '(\.\./)*shared/(design|spec|validation)[A-Za-z0-9_./-]*' "$f" 2>/dev/null)
  # 2. Sections: docs/NAME.md followed by §N, "section N", a bare N.N, with ", §M" / "–M" chains.
  while IFS= read -r hit; do
    [[ -z $hit ]] && continue
    line=${hit%%:*}
    cite=${hit#*:}
    doc=${cite#docs/}
    doc=${doc%%.md*}
    nums=$(grep -oE '[0-9]+(\.[0-9]+)*[a-z]?' <<<"${cite#*.md}")
    for n in $nums; do
      [[ ${have[$doc]} == *" $n "* ]] && continue
      report "$f:$line: '$cite': docs/$doc.md has no section $n"
    done
  done < <(grep -noE "docs/$name_re(,? ?(§ ?|section |sections )[0-9]+(\.[0-9]+)*[a-z]?|[ ]+[0-9]+\.[0-9]+[a-z]?)((, ?| and )§ ?[0-9]+(\.[0-9]+)*[a-z]?|(–|-)[0-9]+(\.[0-9]+)*[a-z]?)*" "$f" 2>/dev/null)
done

if ((bad)); then
  echo "FAILED: cite the design notes as docs/NAME.md §N, with N a heading of that file" >&2
  exit 1
fi
echo "doc citations: ${#files[@]} files checked, all cite docs/ sections that exist"
