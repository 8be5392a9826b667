"""mutant.py -- what a mutant is, how it is named, and how it is applied.

A mutant is a small edit of one source file: one or more replacements of
a span of its text, all made by one operator at one place. It is reported
at the line of its first edit, and it is named by what it changes, not by
where: the file, the enclosing function, the operator, the text of the
line before and after the edit, and which occurrence of that same change
in that function it is. A line number would move with every edit above
it; the name moves only when the mutated line itself changes, so an
argument in mutants/equivalent.tsv keeps naming its mutant while the rest
of the file is edited.
"""
import hashlib
from dataclasses import dataclass, field

# The verdicts, in the order the report lists them.
KILLED = "killed"  # a test failed, or a test crashed
TIMEOUT = "timeout"  # a test ran past its guard: a hang, counted as caught
SURVIVED = "survived"  # every test that executes the line passed
UNCOVERED = "uncovered"  # no test executes the line: nothing could catch it
EQUIVALENT = "equivalent"  # survived or uncovered, and argued harmless
INVALID = "invalid"  # the mutant does not compile: not a program
NOT_RUN = "not-run"  # the budget ran out before it was tried
NOT_BUILT = "not-built"  # under an #if this build leaves out, or a file for another OS
VERDICTS = (KILLED, TIMEOUT, SURVIVED, UNCOVERED, EQUIVALENT, INVALID, NOT_RUN, NOT_BUILT)


@dataclass
class Mutant:
    path: str  # relative to the project's top
    lang: str  # c, sh or awk
    function: str  # the enclosing function ("-" at file level)
    op: str  # the operator's name
    line: int  # 1-based line of the first edit
    last_line: int  # the last line the mutated statement spans
    edits: list  # [(start, end, replacement)], offsets into the file's text
    before: str  # the mutated line(s) before, whitespace collapsed
    after: str  # the same after the edit
    first_line: int = 0  # the first line of the mutated statement (0: line)
    occurrence: int = 0  # the n-th identical change in the function
    verdict: str = ""
    test: str = ""  # the test that killed it, or the reason
    tests_run: int = 0
    seconds: float = 0.0  # from writing it to putting the file back
    test_seconds: float = 0.0  # of which its tests ran
    why: str = ""  # the argument, when equivalent
    extra: dict = field(default_factory=dict)

    @property
    def key(self):
        return (self.path, self.function, self.op, self.before, self.after)

    @property
    def id(self):
        h = hashlib.sha1("\x1f".join(self.key + (str(self.occurrence),)).encode())
        return h.hexdigest()[:10]

    def apply(self, text):
        """The file's text with this mutant's edits made."""
        out, pos = [], 0
        for start, end, repl in sorted(self.edits):
            out.append(text[pos:start])
            out.append(repl)
            pos = end
        out.append(text[pos:])
        return "".join(out)


def squash(s):
    """s with every run of whitespace made one space, trimmed."""
    return " ".join(s.split())


def describe(text, edits, line_starts):
    """The before and after text of the lines the edits touch."""
    lo = min(e[0] for e in edits)
    hi = max(e[1] for e in edits)
    first = line_of(line_starts, lo)
    last = line_of(line_starts, max(hi - 1, lo))
    a = line_starts[first - 1]
    b = line_starts[last] - 1 if last < len(line_starts) else len(text)
    before = text[a:b]
    shifted = [(s - a, e - a, r) for s, e, r in edits]
    m = Mutant("", "", "", "", 0, 0, shifted, "", "")
    return squash(before), squash(m.apply(before)), first, last


def line_starts_of(text):
    starts = [0]
    for i, ch in enumerate(text):
        if ch == "\n":
            starts.append(i + 1)
    return starts


def line_of(line_starts, offset):
    """The 1-based line holding offset."""
    lo, hi = 0, len(line_starts)
    while lo + 1 < hi:
        mid = (lo + hi) // 2
        if line_starts[mid] <= offset:
            lo = mid
        else:
            hi = mid
    return lo + 1


def number_occurrences(mutants):
    """Gives identical changes in one function their occurrence numbers, in
    file order."""
    seen = {}
    for m in sorted(mutants, key=lambda m: (m.path, m.edits[0][0], m.op, m.after)):
        k = m.key
        m.occurrence = seen.get(k, 0)
        seen[k] = m.occurrence + 1
    return mutants
