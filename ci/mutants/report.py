"""report.py -- the arguments of mutants/equivalent.tsv, and what a run
writes: build/mutants/mutants.tsv (a row per mutant), mutants.md (the
table), and the lines it prints.
"""
import collections
import os

from mutant import (EQUIVALENT, INVALID, KILLED, NOT_BUILT, NOT_RUN, SURVIVED, TIMEOUT, UNCOVERED)

EQUIV_COLUMNS = ("file", "function", "operator", "before", "after", "n", "why")


class Argument:
    def __init__(self, key, n, why, lineno):
        self.key, self.n, self.why, self.lineno = key, n, why, lineno
        self.used = None  # the mutant it explained


def read_equivalent(path):
    """{(file, function, operator, before, after, n): Argument}: each row
    names one mutant exactly and says why it changes no behaviour (or why
    no test can reach its line)."""
    rows = {}
    if not os.path.exists(path):
        return rows
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            fields = line.split("\t")
            if tuple(fields) == EQUIV_COLUMNS:
                continue
            if len(fields) != len(EQUIV_COLUMNS) or not fields[5].isdigit() or not fields[6].strip():
                raise SystemExit("%s:%d: not a row of %s (tab-separated, n a number, why not empty)"
                                 % (path, lineno, ", ".join(EQUIV_COLUMNS)))
            key = tuple(fields[:5])
            full = key + (int(fields[5]),)
            if full in rows:
                raise SystemExit("%s:%d: the same mutant as line %d" % (path, lineno, rows[full].lineno))
            rows[full] = Argument(key, int(fields[5]), fields[6], lineno)
    return rows


def argument_for(rows, m):
    return rows.get(m.key + (m.occurrence,))


def row_of(m, why):
    return "\t".join(m.key + (str(m.occurrence), why))


TSV_COLUMNS = ("id", "file", "line", "function", "operator", "before", "after", "n", "verdict", "test", "seconds")


def clean(s):
    return s.replace("\t", " ").replace("\n", " ")


def write_tsv(path, mutants):
    with open(path, "w", encoding="utf-8") as f:
        f.write("\t".join(TSV_COLUMNS) + "\n")
        for m in mutants:
            f.write("\t".join(clean(str(x)) for x in (
                m.id, m.path, m.line, m.function, m.op, m.before, m.after, m.occurrence, m.verdict,
                m.test or m.why or "-", "%.2f" % m.seconds)) + "\n")


SHOWN = (KILLED, TIMEOUT, SURVIVED, EQUIVALENT, UNCOVERED, INVALID, NOT_RUN, NOT_BUILT)


def table(mutants):
    """The per-file table, as the kill matrix draws builds: a row per file,
    a column per verdict, and the share of the mutants that are not
    equivalent that a test killed."""
    per = collections.OrderedDict()
    for m in sorted(mutants, key=lambda m: m.path):
        per.setdefault(m.path, collections.Counter())[m.verdict] += 1
    total = collections.Counter()
    rows = ["| file | " + " | ".join(SHOWN) + " | score |", "|---|" + "---:|" * (len(SHOWN) + 1)]
    for path, c in per.items():
        total.update(c)
        rows.append("| %s | %s | %s |" % (path, " | ".join(str(c[v] or "") for v in SHOWN), score_text(c)))
    rows.append("| **all** | %s | %s |" % (" | ".join("**%d**" % total[v] for v in SHOWN), score_text(total)))
    return rows, total


def score(c):
    caught = c[KILLED] + c[TIMEOUT]
    judged = caught + c[SURVIVED] + c[UNCOVERED]
    return caught, judged


def score_text(c):
    caught, judged = score(c)
    return "%.1f%%" % (100.0 * caught / judged) if judged else "-"


def last_line(total):
    n = total[KILLED] + total[TIMEOUT] + total[SURVIVED] + total[EQUIVALENT] + total[UNCOVERED]
    return "mutants: %d killed, %d survived, %d equivalent, %d uncovered, of %d" % (
        total[KILLED] + total[TIMEOUT], total[SURVIVED], total[EQUIVALENT], total[UNCOVERED], n)


def write_md(path, rows, mutants, notes):
    with open(path, "w", encoding="utf-8") as f:
        f.write("# Mutants\n\n")
        f.write("\n".join(rows) + "\n\n")
        open_ones = [m for m in mutants if m.verdict in (SURVIVED, UNCOVERED)]
        if open_ones:
            f.write("## Not killed and not explained\n\n| file:line | function | operator | before | after | verdict |\n"
                    "|---|---|---|---|---|---|\n")
            for m in open_ones:
                f.write("| %s:%d | %s | %s | `%s` | `%s` | %s |\n" % (
                    m.path, m.line, m.function, m.op, md(m.before), md(m.after), m.verdict))
        for n in notes:
            f.write("\n" + n + "\n")


def md(s):
    return s.replace("|", "\\|").replace("`", "'")
