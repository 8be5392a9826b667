"""sh_ops.py -- the mutants of the kit's shell and awk.

A scanner that knows bash's quoting well enough to find its tests
([[ ]], [ ]), its arithmetic ((( )), $(( ))), its if conditions, and the
awk programs it runs; an awk lexer for those programs and the .awk files.
Strings, comments and here-documents are never mutated: they are the
messages.

The operators (the names the report and mutants/equivalent.tsv use):

  rel        a comparison swapped: -lt and -gt, -le and -ge, -eq and -ne,
             == and !=, < and >, <= and >= (in tests, arithmetic and awk)
  boundary   -lt and -le, -gt and -ge; < and <=, > and >=
  logic      && and || inside a test, arithmetic or awk
  anchor     a regular expression's ^ or $ dropped (=~ and its regex
             variables; awk's /re/, ~ and match, sub and gsub)
  arith      an integer added or subtracted, or a for loop's start, plus
             or minus one
  cond-del   a condition deleted: an if's or elif's condition made true,
             a test that guards a command with && or || taken away, an
             awk rule's pattern or an awk if's condition taken away
"""
import re

from mutant import Mutant, describe, line_of, line_starts_of

REL_WORDS = {"-lt": "-gt", "-gt": "-lt", "-le": "-ge", "-ge": "-le", "-eq": "-ne", "-ne": "-eq"}
BOUND_WORDS = {"-lt": "-le", "-le": "-lt", "-gt": "-ge", "-ge": "-gt"}
REL = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "==": "!=", "!=": "=="}
BOUNDARY = {"<": "<=", "<=": "<", ">": ">=", ">=": ">"}
LOGIC = {"&&": "||", "||": "&&"}
# A number is an arithmetic operand when it is added or subtracted: a
# count's step, an index's offset. A scale (1024, 1000) multiplied or
# divided is a unit, not a boundary, and a number compared is the
# boundary operator's.
ARITH_NEIGHBOURS = {"+", "-", "+=", "-="}
CMD_START = {"", ";", "|", "&", "&&", "||", "(", "{", "then", "do", "else", "elif", "if", "while",
             "until", "!", "$(", "`", "\n", "exec", "time"}


class Out:
    """The mutants of one file, with the lines a test must run to reach
    each (its whole command)."""

    def __init__(self, path, lang, text):
        self.path, self.lang, self.text = path, lang, text
        self.starts = line_starts_of(text)
        self.mutants = []

    def add(self, op, edits, function, span, host=None):
        before, after, first, last = describe(self.text, edits, self.starts)
        if before == after:
            return
        m = Mutant(self.path, self.lang, function, op, first, last, edits, before, after)
        m.first_line = min(first, span[0])
        m.last_line = max(last, span[1])
        if host:
            m.extra["host"] = host
        self.mutants.append(m)


# ------------------------------------------------------------------ bash

class BashScan:
    """One pass over a bash script: the regions the operators work on."""

    def __init__(self, text):
        self.t = text
        self.n = len(text)
        self.tests = []  # (start, end) of [[ ... ]]'s inside
        self.brackets = []  # (start, end) of [ ... ]'s inside
        self.ariths = []  # (start, end) of (( ... )) and $(( ... )) insides
        self.ifs = []  # (start, end) of an if's or elif's condition list
        self.guards = []  # (start, end): a test and the && or || after it
        self.programs = []  # (start, end, cmd_start) of awk programs in ''
        self.sq = []  # (start, end) of '...' insides
        self.assigns = []  # (name, start, end): name='...' (inside)
        self.regex_vars = set()
        self.joined = set()  # lines whose newline does not end the command
        self.program_cmds = set()  # the awk commands whose program is found
        self.words = []  # the current command's words, as (text, start)
        self.code(0, None)

    # Words and commands --------------------------------------------------
    def prev_word(self):
        return self.words[-1][0] if self.words else ""

    def at_command_start(self):
        return not self.words or self.words[-1][0] in CMD_START

    def end_word(self, start, i):
        if i > start:
            self.words.append((self.t[start:i], start))

    def code(self, i, until):
        """Scans code from i to the closing `until` (")" of a $( or "`" of a
        backtick, None at the top); returns the index after it."""
        t, n = self.t, self.n
        word = i
        outer = self.words
        self.words = []
        pending_heredocs = []
        while i < n:
            c = t[i]
            if until and t.startswith(until, i):
                self.end_word(word, i)
                self.words = outer
                return i + len(until)
            if c in " \t":
                self.end_word(word, i)
                i += 1
                word = i
                continue
            if c == "\\" and i + 1 < n:
                if t[i + 1] == "\n":
                    self.joined.add(line_number(t, i))
                i += 2
                continue
            if c == "\n":
                self.end_word(word, i)
                continued = self.prev_word() in ("|", "&&", "||", "\\")
                if continued:
                    self.joined.add(line_number(t, i))
                i += 1
                for word_, dash in pending_heredocs:
                    i = self.heredoc(i, word_, dash)
                pending_heredocs = []
                if not continued:
                    self.words.append(("\n", i))
                word = i
                continue
            if c == "#" and word == i and (i == 0 or t[i - 1] in " \t\n;|&("):
                j = t.find("\n", i)
                i = n if j < 0 else j
                continue
            if c == "'":
                start = i + 1
                j = t.find("'", start)
                if j < 0:
                    raise SyntaxError("an unclosed ' at offset %d" % i)
                self.sq.append((start, j))
                self.note_newlines(i, j)
                self.classify_sq(start, j, word)
                i = j + 1
                continue
            if c == '"':
                i = self.dq(i + 1)
                continue
            if c == "$" and t.startswith("$((", i):
                i = self.arith(i + 3)
                continue
            if c == "$" and t.startswith("$(", i):
                self.end_word(word, i)
                self.words.append(("$(", i))
                i = self.code(i + 2, ")")
                word = i
                continue
            if c == "$" and t.startswith("${", i):
                i = self.param(i + 2)
                continue
            if c == "$" and t.startswith("$'", i):
                i = self.ansi(i + 2)
                continue
            if c == "`":
                i = self.code(i + 1, "`")
                continue
            if t.startswith("((", i) and word == i and self.at_command_start():
                start = i
                j = self.arith(i + 2)
                self.guard_after(start, j)
                self.end_word(start, j)
                i = j
                word = i
                continue
            if t.startswith("[[", i) and word == i and self.at_command_start() and t[i + 2:i + 3] in " \t\n":
                start = i
                j = self.test(i + 2)
                self.guard_after(start, j)
                self.end_word(start, j)
                i = j
                word = i
                continue
            if c == "[" and word == i and self.at_command_start() and t[i + 1:i + 2] in " \t":
                start = i
                j = t.find(" ]", i)
                if j > 0:
                    self.brackets.append((i + 1, j + 1))
                    self.guard_after(start, j + 2)
                    self.end_word(start, j + 2)
                    i = j + 2
                    word = i
                    continue
            if t.startswith("<<", i) and not t.startswith("<<<", i):
                m = re.compile(r"<<(-?)\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\2").match(t, i)
                if m:
                    pending_heredocs.append((m.group(3), m.group(1) == "-"))
                    self.end_word(word, i)
                    i = m.end()
                    word = i
                    continue
            for op in ("&&", "||", ";;", ";", "|", "&", "(", ")", "{", "}"):
                if t.startswith(op, i) and (op not in "{}" or (word == i and t[i + 1:i + 2] in " \t\n;")):
                    self.end_word(word, i)
                    self.words.append((op, i))
                    i += len(op)
                    word = i
                    break
            else:
                i += 1
        if until:
            raise SyntaxError("an unclosed %r" % until)
        self.end_word(word, i)
        self.words = outer
        return i

    def note_newlines(self, a, b):
        k = self.t.find("\n", a, b)
        while k >= 0:
            self.joined.add(line_number(self.t, k))
            k = self.t.find("\n", k + 1, b)

    def classify_sq(self, start, end, word):
        """A '...' that is an awk program, or the value of an assignment."""
        t = self.t
        if word < start - 1:  # the quote continues a word: -F'\t', x='...'
            m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)=", t[word:start - 1])
            if m:
                self.assigns.append((m.group(1), start, end))
            return
        words = [w for w, _ in self.words]
        k = len(words)
        while k > 0 and words[k - 1] not in CMD_START:
            k -= 1
        cmd = words[k:]
        if not cmd or cmd[0] != "awk" or cmd[-1] in ("-F", "-v", "-f"):
            return
        cmd_start = self.words[k][1]
        if cmd_start in self.program_cmds:
            return  # an awk command's program is its first such string
        self.program_cmds.add(cmd_start)
        self.programs.append((start, end, cmd_start))

    def dq(self, i):
        t, n = self.t, self.n
        while i < n:
            c = t[i]
            if c == "\\":
                i += 2
                continue
            if c == '"':
                return i + 1
            if t.startswith("$((", i):
                i = self.arith(i + 3, record=False)
                continue
            if t.startswith("$(", i):
                i = self.code(i + 2, ")")
                continue
            if t.startswith("${", i):
                i = self.param(i + 2)
                continue
            if c == "`":
                i = self.code(i + 1, "`")
                continue
            if c == "\n":
                self.joined.add(line_number(t, i))
            i += 1
        raise SyntaxError('an unclosed " ')

    def ansi(self, i):
        t = self.t
        while i < self.n:
            if t[i] == "\\":
                i += 2
                continue
            if t[i] == "'":
                return i + 1
            i += 1
        raise SyntaxError("an unclosed $'")

    def param(self, i):
        t, depth = self.t, 1
        while i < self.n:
            c = t[i]
            if c == "\\":
                i += 2
                continue
            if c == '"':
                i = self.dq(i + 1)
                continue
            if c == "'":
                j = t.find("'", i + 1)
                i = j + 1
                continue
            if t.startswith("${", i):
                depth += 1
                i += 2
                continue
            if t.startswith("$(", i) and not t.startswith("$((", i):
                i = self.code(i + 2, ")")
                continue
            if c == "}":
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
        raise SyntaxError("an unclosed ${")

    def arith(self, i, record=True):
        """From inside (( or $((, to after the matching )); records the
        inside."""
        t, depth, start = self.t, 0, i
        while i < self.n:
            c = t[i]
            if t.startswith("$(", i) and not t.startswith("$((", i):
                i = self.code(i + 2, ")")
                continue
            if t.startswith("${", i):
                i = self.param(i + 2)
                continue
            if c == '"':
                i = self.dq(i + 1)
                continue
            if c == "(":
                depth += 1
            elif c == ")":
                if depth == 0 and t.startswith("))", i):
                    if record:
                        self.ariths.append((start, i))
                    return i + 2
                depth -= 1
            elif c == "\n":
                self.joined.add(line_number(t, i))
            i += 1
        raise SyntaxError("an unclosed ((")

    def test(self, i):
        """From inside [[, to after the matching ]]."""
        t, start = self.t, i
        while i < self.n:
            c = t[i]
            if c == "\\":
                i += 2
                continue
            if c == "'":
                j = t.find("'", i + 1)
                i = j + 1
                continue
            if c == '"':
                i = self.dq(i + 1)
                continue
            if t.startswith("$((", i):
                i = self.arith(i + 3, record=False)
                continue
            if t.startswith("$(", i):
                i = self.code(i + 2, ")")
                continue
            if t.startswith("${", i):
                i = self.param(i + 2)
                continue
            if t.startswith("]]", i) and t[i - 1] in " \t\n":
                self.tests.append((start, i))
                for m in re.finditer(r"=~\s+\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", t[start:i]):
                    self.regex_vars.add(m.group(1))
                return i + 2
            if c == "\n":
                self.joined.add(line_number(t, i))
            i += 1
        raise SyntaxError("an unclosed [[")

    def heredoc(self, i, word, dash):
        t = self.t
        while i < self.n:
            j = t.find("\n", i)
            line = t[i:] if j < 0 else t[i:j]
            if (line.lstrip("\t") if dash else line) == word:
                return self.n if j < 0 else j + 1
            i = self.n if j < 0 else j + 1
        return i

    def guard_after(self, start, end):
        """A test at start..end followed by && or || guards what follows."""
        m = re.compile(r"[ \t]*(&&|\|\|)[ \t]*(?:\\\n[ \t]*|\n[ \t]*)?").match(self.t, end)
        if m and self.t[m.end():m.end() + 1] not in ("", "\n"):
            self.guards.append((start, m.end()))


def line_number(text, offset):
    return text.count("\n", 0, offset) + 1


def bash_functions(text):
    """[(first line, last line, name)] of the script's functions: a
    definition `name() {` at the start of a line, closed by `}` alone at
    the start of a line."""
    out, cur = [], None
    for n, line in enumerate(text.split("\n"), 1):
        m = re.match(r"(?:function\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*\(\)\s*\{?\s*$", line)
        if m and cur is None:
            cur = (n, m.group(1))
        elif line.startswith("}") and cur:
            out.append((cur[0], n, cur[1]))
            cur = None
    return out


def function_at(funcs, line):
    for a, b, name in funcs:
        if a <= line <= b:
            return name
    return "-"


def logical_span(scan, line):
    a = line
    while a - 1 in scan.joined:
        a -= 1
    b = line
    while b in scan.joined:
        b += 1
    return a, b


_TEST_WORD = re.compile(r"""(?:"(?:\\.|[^"\\])*"|'[^']*'|[^\s"'])+""")


def bash_mutants(path, text):
    out = Out(path, "sh", text)
    scan = BashScan(text)
    funcs = bash_functions(text)

    def fn(offset):
        return function_at(funcs, line_of(out.starts, offset))

    def span(offset):
        return logical_span(scan, line_of(out.starts, offset))

    sq_inside = scan.sq
    for a, b in scan.tests + scan.brackets:
        words = [(m.group(), m.start() + a, m.end() + a) for m in _TEST_WORD.finditer(text[a:b])]
        for k, (w, s, e) in enumerate(words):
            if w in REL_WORDS:
                out.add("rel", [(s, e, REL_WORDS[w])], fn(s), span(s))
            if w in BOUND_WORDS:
                out.add("boundary", [(s, e, BOUND_WORDS[w])], fn(s), span(s))
            if w in ("==", "!=", "<", ">") and (a, b) in scan.tests:
                out.add("rel", [(s, e, REL[w])], fn(s), span(s))
            if w in ("==", "!=") and (a, b) in scan.brackets:
                out.add("rel", [(s, e, REL[w])], fn(s), span(s))
            if w in LOGIC:
                out.add("logic", [(s, e, LOGIC[w])], fn(s), span(s))
            if w == "=~" and k + 1 < len(words):
                rw, rs, re_ = words[k + 1]
                anchor_edits(out, rw, rs, fn(s), span(s))
    for name, a, b in scan.assigns:
        if name in scan.regex_vars:
            anchor_edits(out, text[a:b], a, fn(a), span(a))
    for a, b in scan.ariths:
        arith_mutants(out, text, a, b, fn(a), span(a))
    for a, b in scan.guards:
        out.add("cond-del", [(a, b, "")], fn(a), span(a))
    cond_deletes(out, text, scan, fn, span)
    for a, b, cmd in scan.programs:
        awk_mutants(out, text, a, b, fn(a), span(cmd), host=(path,) + span(cmd))
    return out.mutants


def anchor_edits(out, word, start, function, span):
    """The anchors of a regex written as word at start: ^ first, $ last."""
    if word.startswith("^"):
        out.add("anchor", [(start, start + 1, "")], function, span)
    if word.endswith("$") and not word.endswith("\\$") and len(word) > 1:
        out.add("anchor", [(start + len(word) - 1, start + len(word), "")], function, span)


_ARITH_TOKEN = re.compile(r"\s+|(?P<num>\d+#\S+|\b\d+\b)|(?P<op><=|>=|==|!=|&&|\|\||\+=|-=|\*\*|[-+*/%<>!()?:=,])|\S")


def arith_mutants(out, text, a, b, function, span):
    # A parameter's default (${x:-0}) is not arithmetic: masked.
    inner = re.sub(r"\$\{[^}]*\}", lambda m: "v" * len(m.group()), text[a:b])
    toks = [(m.group(), m.start() + a, m.end() + a, m.lastgroup) for m in _ARITH_TOKEN.finditer(inner)
            if not m.group().isspace()]
    for k, (w, s, e, kind) in enumerate(toks):
        if w in REL:
            out.add("rel", [(s, e, REL[w])], function, span)
        if w in BOUNDARY:
            out.add("boundary", [(s, e, BOUNDARY[w])], function, span)
        if w in LOGIC:
            out.add("logic", [(s, e, LOGIC[w])], function, span)
        if kind == "num" and w.isdigit():
            prev = toks[k - 1][0] if k else ""
            nxt = toks[k + 1][0] if k + 1 < len(toks) else ""
            if prev.endswith("#") or nxt.startswith("#"):
                continue
            if prev in ARITH_NEIGHBOURS or nxt in ARITH_NEIGHBOURS:
                number_edits(out, w, s, e, function, span)


def number_edits(out, w, s, e, function, span):
    v = int(w)
    out.add("arith", [(s, e, str(v + 1))], function, span)
    if v > 0:
        out.add("arith", [(s, e, str(v - 1))], function, span)


def cond_deletes(out, text, scan, fn, span):
    """An if's or elif's condition made true: the list after the keyword,
    up to the ; or newline before its then."""
    for m in re.finditer(r"(?m)^[ \t]*(?:el)?if[ \t]+", text):
        s = m.end()
        if inside(scan.sq, s):
            continue
        e = then_of(text, s)
        if e is not None and text[s:e] not in ("", "true"):
            out.add("cond-del", [(s, e, "true")], fn(s), span(s))


def then_of(text, s):
    """The end of the if condition that starts at s: where the ; or the
    newline before its `then` is (quotes and brackets skipped), trailing
    blanks left out; None if there is no such then."""
    i, n, depth = s, len(text), 0
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c in "'\"":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if c == '"' and text[j] == "\\" else 1
            i = j + 1
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and text.startswith("then", i) and not re.match(r"\w", text[i + 4:i + 5]):
            j = i - 1
            while j >= s and text[j] in " \t":
                j -= 1
            if j >= s and text[j] in ";\n":
                while j > s and text[j - 1] in " \t\n":
                    j -= 1
                return j
        i += 1
    return None


def inside(spans, offset):
    return any(a <= offset < b for a, b in spans)


# ------------------------------------------------------------------- awk

_AWK_TOKEN = re.compile(r"""
    (?P<nl>\n)
  | (?P<ws>[ \t]+|\\\n)
  | (?P<comment>\#[^\n]*)
  | (?P<string>"(?:\\.|[^"\\\n])*")
  | (?P<number>\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>&&|\|\||<=|>=|==|!=|!~|\+\+|--|\+=|-=|\*=|/=|%=|\^=|>>|\*\*|[-+*/%^<>=!~?:,;(){}\[\]$|])
""", re.X)
REGEX_BEFORE = {"", "(", ",", "{", "}", ";", "\n", "!", "~", "!~", "&&", "||", "==", "!=", "<", "<=",
                ">", ">=", "=", "+=", "-=", "?", ":", "print", "printf", "return", "in"}


def awk_tokens(text, a, b):
    """The tokens of the awk program text[a:b] as (kind, text, start, end)."""
    toks, i = [], a
    while i < b:
        prev = ""
        for k in range(len(toks) - 1, -1, -1):
            if toks[k][0] not in ("ws", "comment"):
                prev = toks[k][1] if toks[k][0] != "nl" else "\n"
                break
        if text[i] == "/" and prev in REGEX_BEFORE:
            j = i + 1
            while j < b and text[j] != "/":
                j += 2 if text[j] == "\\" else 1
                if j < b and text[j] == "[":  # a bracket expression may hold a /
                    k = text.find("]", j + 2)
                    j = k if k > 0 else j
            toks.append(("regex", text[i:j + 1], i, j + 1))
            i = j + 1
            continue
        m = _AWK_TOKEN.match(text, i, b)
        if not m:
            toks.append(("other", text[i], i, i + 1))
            i += 1
            continue
        toks.append((m.lastgroup, m.group(), m.start(), m.end()))
        i = m.end()
    return [t for t in toks if t[0] not in ("ws", "comment")]


def awk_mutants(out, text, a, b, function, span, host=None):
    toks = awk_tokens(text, a, b)
    n = len(toks)
    in_print = message = False
    depth = 0  # parentheses since the print began
    brace = 0
    loop_init = False
    for k, (kind, w, s, e) in enumerate(toks):
        prev = toks[k - 1][1] if k else ""
        nxt = toks[k + 1][1] if k + 1 < n else ""
        fn = awk_function(toks, k, function)
        sp = span if host else (line_of(out.starts, s), line_of(out.starts, e))
        if kind == "name" and w in ("print", "printf"):
            in_print, depth = True, 0
            message = to_stderr(toks, k)
        elif w in (";", "\n", "}", "{") or kind == "nl":
            in_print = message = False
        elif w == "(":
            depth += 1
        elif w == ")":
            depth -= 1
        if w == "{":
            if brace == 0:
                pattern_delete(out, toks, k, fn, sp, host)
            brace += 1
        elif w == "}":
            brace -= 1
        if message:
            continue  # a print to stderr is a message
        if kind == "op":
            redirect = in_print and depth == 0 and w in (">", ">>")
            getline_input = w == "<" and (prev == "getline" or (k >= 2 and toks[k - 2][1] == "getline"))
            if w in REL and not redirect and not getline_input:
                out.add("rel", [(s, e, REL[w])], fn, sp, host)
            if w in BOUNDARY and not redirect and not getline_input:
                out.add("boundary", [(s, e, BOUNDARY[w])], fn, sp, host)
            if w in LOGIC:
                out.add("logic", [(s, e, LOGIC[w])], fn, sp, host)
        elif kind == "regex":
            body = w[1:-1]
            if body.startswith("^"):
                out.add("anchor", [(s + 1, s + 2, "")], fn, sp, host)
            if body.endswith("$") and not body.endswith("\\$") and len(body) > 1:
                out.add("anchor", [(e - 2, e - 1, "")], fn, sp, host)
        elif kind == "string" and (prev in ("~", "!~") or dynamic_regex_arg(toks, k)):
            body = w[1:-1]
            if body.startswith("^"):
                out.add("anchor", [(s + 1, s + 2, "")], fn, sp, host)
            if body.endswith("$") and not body.endswith("\\$") and len(body) > 1:
                out.add("anchor", [(e - 2, e - 1, "")], fn, sp, host)
        elif kind == "number" and w.isdigit() and prev != "$":
            if prev in ARITH_NEIGHBOURS or nxt in ARITH_NEIGHBOURS or (prev == "=" and loop_init):
                number_edits_host(out, w, s, e, fn, sp, host)
        if kind == "name" and w == "for" and nxt == "(":
            loop_init = True
        elif w == ";" or w == ")":
            loop_init = False
        if kind == "name" and w == "if" and nxt == "(":
            close = matching(toks, k + 1)
            if close:
                cs, ce = toks[k + 2][2], toks[close - 1][3]
                out.add("cond-del", [(cs, ce, "1")], fn, sp, host)


def to_stderr(toks, k):
    """Whether the print or printf at k writes to /dev/stderr: a message."""
    for j in range(k + 1, len(toks)):
        kind, w = toks[j][0], toks[j][1]
        if kind == "nl" or w in (";", "}"):
            return False
        if w in (">", ">>") and j + 1 < len(toks) and toks[j + 1][1] == '"/dev/stderr"':
            return True
    return False


def number_edits_host(out, w, s, e, function, span, host):
    v = int(w)
    out.add("arith", [(s, e, str(v + 1))], function, span, host)
    if v > 0:
        out.add("arith", [(s, e, str(v - 1))], function, span, host)


def matching(toks, k):
    depth = 0
    for j in range(k, len(toks)):
        if toks[j][1] == "(":
            depth += 1
        elif toks[j][1] == ")":
            depth -= 1
            if depth == 0:
                return j
    return None


def dynamic_regex_arg(toks, k):
    """A string that match's second argument or sub's or gsub's first is:
    a regular expression."""
    depth, j = 0, k - 1
    commas = 0
    while j >= 0:
        w = toks[j][1]
        if w == ")":
            depth += 1
        elif w == "(":
            if depth == 0:
                name = toks[j - 1][1] if j else ""
                return (name in ("sub", "gsub") and commas == 0) or (name == "match" and commas == 1)
            depth -= 1
        elif w == "," and depth == 0:
            commas += 1
        elif w in (";", "{", "}", "\n"):
            return False
        j -= 1
    return False


def pattern_delete(out, toks, k, fn, sp, host):
    """The pattern of the awk rule whose action opens at token k."""
    j = k - 1
    while j >= 0 and toks[j][0] != "nl" and toks[j][1] not in ("}", ";"):
        j -= 1
    first = j + 1
    if first >= k:
        return
    words = [t[1] for t in toks[first:k]]
    if words[0] in ("BEGIN", "END", "function", "func"):
        return
    s, e = toks[first][2], toks[k - 1][3]
    out.add("cond-del", [(s, e, "")], fn, sp, host)


def awk_function(toks, k, default):
    """The awk function around token k, or default (the rule's host)."""
    depth = 0
    for j in range(k, -1, -1):
        w = toks[j][1]
        if w == "}":
            depth += 1
        elif w == "{":
            if depth == 0:
                i = j - 1
                while i >= 0 and toks[i][0] == "nl":
                    i -= 1
                # function name(args) {
                if i >= 0 and toks[i][1] == ")":
                    p = i
                    while p >= 0 and toks[p][1] != "(":
                        p -= 1
                    if p >= 2 and toks[p - 2][1] in ("function", "func"):
                        return toks[p - 1][1]
                return default
            depth -= 1
    return default


def awk_file_mutants(path, text):
    out = Out(path, "awk", text)
    awk_mutants(out, text, 0, len(text), "-", None)
    return out.mutants


def mutants_of(path, text, lang):
    if lang == "awk":
        return awk_file_mutants(path, text)
    return bash_mutants(path, text)
