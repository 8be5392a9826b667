#!/usr/bin/env bash
# options.sh -- the README's list of options, made from the runtime's table of them.
#
# Every option the runtime reads, from gb_options or from the environment,
# is written once: a row of the table gb__options in runtime/src/init.c,
# which the parsing, the check of gb_init's options and the comparison of
# a second gb_init's settings all read. A list copied into a README by
# hand goes stale without anyone noticing, so the README's list (between
# its markers <!-- options:begin --> and <!-- options:end -->) is made by
# this script alone, from that table read as text: a row is the lines
# between "[OPT_...] = {" and "}," in it, and its GB__FIELD/GB__NUMBER,
# .env, .words, .takes, .dflt and .about lines are what is read (init.c
# says so at the table). The public header's comments name each enum
# option's variable with its words, "GB_HUGE (on|off|auto)": --check
# holds those to the table too.
#
# Usage: ci/options.sh [--print | --tsv | --check]
#   (none)   rewrite the README's list from the table
#   --print  write the list to stdout, change nothing
#   --tsv    write the table as read, a row a line: member, variable, words,
#            takes, default, what (- where a row has none); tests/options.bats
#            holds this to the table as compiled
#   --check  exit 1, naming each option whose line differs, when the
#            README's list is not the table's, or when giveback.h names an
#            option's words otherwise (ci/lint.sh runs it)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

die() { echo "options.sh: error: $*" >&2; exit 2; }

mode="write"
case "${1:-}" in
    "") ;;
    --print) mode=print ;;
    --tsv) mode=tsv ;;
    --check) mode=check ;;
    -h | --help) sed -n '/^# Usage:/,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (usage: ci/options.sh [--print | --tsv | --check])" ;;
esac
[[ $# -le 1 ]] || die "one argument at most (usage: ci/options.sh [--print | --tsv | --check])"

# Where to read: the tests point these at copies.
src="${GB_OPTIONS_SRC:-$root/runtime/src/init.c}"
readme="${GB_OPTIONS_README:-$root/README.md}"
header="${GB_OPTIONS_HEADER:-$root/runtime/include/giveback.h}"
begin='<!-- options:begin -->'
end='<!-- options:end -->'

# The table as TSV, one row a line, in its order.
tsv="$(awk '
    function str(line,   s) {   # the one string on a line
        s = line
        sub(/^[^"]*"/, "", s)
        sub(/"[^"]*$/, "", s)
        return s
    }
    function flush() {
        if (!inrow) return
        if (field == "") { printf "options.sh: a row of gb__options without GB__FIELD or GB__NUMBER, before line %d\n", NR > "/dev/stderr"; bad = 1 }
        if (about == "" || dflt == "") { printf "options.sh: option %s has no .dflt or .about line\n", field > "/dev/stderr"; bad = 1 }
        printf "%s\t%s\t%s\t%s\t%s\t%s\n", field, env, words, takes, dflt, about
        rows++
        inrow = 0
    }
    /^const gb__option gb__options\[/ { intable = 1; next }
    !intable { next }
    /^};/ { flush(); intable = 0; next }
    /^    \[OPT_[A-Z0-9_]+\] = \{/ {
        flush()
        inrow = 1; field = ""; env = "-"; words = "-"; takes = "-"; dflt = ""; about = ""
        next
    }
    !inrow { next }
    /^        GB__(FIELD|NUMBER)\([a-z0-9_]+\)/ { field = $0; sub(/^ *GB__[A-Z]+\(/, "", field); sub(/\).*/, "", field); next }
    /^        \.env = "/ { env = str($0); next }
    /^        \.takes = "/ { takes = str($0); next }
    /^        \.dflt = "/ { dflt = str($0); next }
    /^        \.about = "/ { about = str($0); next }
    /^        \.words = \{/ {
        w = $0
        sub(/^[^{]*\{ *"/, "", w); sub(/" *\}.*$/, "", w)
        gsub(/" *, *"/, ",", w)
        words = w
        next
    }
    END {
        if (!rows) { print "options.sh: no table gb__options read" > "/dev/stderr"; exit 1 }
        exit bad
    }' "$src")" || die "could not read the table of options in $src"

if [[ "$mode" == tsv ]]; then
    printf '%s\n' "$tsv"
    exit 0
fi

# The list, as the README shows it.
list() {
    echo "$begin"
    echo "<!-- made by ci/options.sh from the table gb__options in runtime/src/init.c: edit the table, not this list -->"
    echo "| variable | \`gb_options\` member | the variable takes | default | what it chooses |"
    echo "|---|---|---|---|---|"
    awk -F'\t' '{
        env = $2 == "-" ? "—" : "`" $2 "`"
        if ($3 != "-") {
            split($3, w, ",")
            takes = "`" w[2] "`, `" w[3] "` or `" w[1] "`"
        } else {
            takes = $4
        }
        if ($2 == "-") takes = "— (the member: " $4 ")"
        printf "| %s | `%s` | %s | %s | %s |\n", env, $1, takes, $5, $6
    }' <<<"$tsv"
    echo "$end"
}

if [[ "$mode" == print ]]; then
    list
    exit 0
fi

awk -v begin="$begin" -v end="$end" '$0 == begin { b++; bl = NR } $0 == end { e++; el = NR }
    END { exit !(b == 1 && e == 1 && bl < el) }' "$readme" ||
    die "$readme needs exactly one line '$begin' and, after it, one '$end'"

if [[ "$mode" == write ]]; then
    new="$(mktemp)"
    # shellcheck disable=SC2064  # expand now: the file is this run's
    trap "rm -f '$new'" EXIT
    list >"$new"
    awk -v begin="$begin" -v end="$end" -v new="$new" '
        $0 == begin { while ((getline line < new) > 0) print line; skip = 1; next }
        $0 == end { skip = 0; next }
        !skip' "$readme" >"$readme.tmp"
    cat "$readme.tmp" >"$readme"
    rm -f "$readme.tmp"
    echo "options.sh: ${readme#"$root/"}: the list of options rewritten from the table"
    exit 0
fi

# --check: the README's list line by line against the table's, each line
# that differs named by its option; then the header's words.
bad=0
want="$(list)"
have="$(awk -v begin="$begin" -v end="$end" '$0 == begin { on = 1 } on { print } $0 == end { on = 0 }' "$readme")"
if [[ "$want" != "$have" ]]; then
    bad=1
    echo "options.sh: README.md's list of options is not the table's (run ci/options.sh to rewrite it):"
    # The rows on either side only: an option missing, added or changed.
    diff <(grep '^| ' <<<"$want") <(grep '^| ' <<<"$have") |
        sed -n 's/^< /  the table: /p; s/^> /  README.md: /p' || true
fi
while IFS=$'\t' read -r field env words _; do
    [[ "$env" != - && "$words" != - ]] || continue
    IFS=, read -r w0 w1 w2 <<<"$words"
    if ! grep -qF "$env ($w1|$w2|$w0)" "$header"; then
        bad=1
        echo "options.sh: ${header#"$root/"} does not say \"$env ($w1|$w2|$w0)\", the words of option $field"
    fi
done <<<"$tsv"
if ((bad)); then
    exit 1
fi
echo "options.sh: README.md's list of options and giveback.h's words are the table's ($(wc -l <<<"$tsv" | tr -d ' ') options)"
