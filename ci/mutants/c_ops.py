"""c_ops.py -- the mutants of a C file.

A small lexer and a walk over the statements of each function body; no
preprocessor and no types beyond what a return needs. Only function
bodies are mutated: a declaration at file level, a macro's definition and
anything between #if and #endif that this build does not compile are
left alone (the last shows as "not built" once coverage is read).

The operators (the names the report and mutants/equivalent.tsv use):

  rel        relational and equality swaps: < and >, <= and >=, == and !=
  boundary   a boundary moved by one: < and <=, > and >=
  logic      && and ||
  negate     an if, while, do or for condition negated
  call-del   a call statement deleted
  assign-del an assignment statement deleted (=, op=, ++, --)
  return     a returned value replaced: NULL for a pointer, true and
             false for a bool, 0 for an integer
  swap       two adjacent call or assignment statements swapped

Lines skipped (arid): comments and preprocessor lines, asserts (the
statements of the assert functions), logging (the statements of the log
functions) and messages (the arguments of a call that holds a string
literal: a format and what it prints). mutants/arid.tsv names the assert
and log functions of the project.
"""
import re

from mutant import Mutant, describe, line_starts_of

_TOKEN = re.compile(
    r"""
    (?P<nl>\n)
  | (?P<ws>[ \t\r\f\v]+|\\\n)
  | (?P<comment>/\*.*?\*/|//[^\n]*)
  | (?P<string>(?:u8|[uUL])?"(?:\\.|[^"\\\n])*")
  | (?P<char>[uUL]?'(?:\\.|[^'\\\n])*')
  | (?P<number>\.?[0-9](?:[eEpP][+-]|[0-9a-zA-Z_.])*)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct>\.\.\.|<<=|>>=|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^]=|[][(){};:,.?~!<>=+\-*/%&|^#])
    """,
    re.S | re.X,
)


class Tok:
    __slots__ = ("kind", "text", "start", "end")

    def __init__(self, kind, text, start, end):
        self.kind, self.text, self.start, self.end = kind, text, start, end

    def __repr__(self):
        return "Tok(%s,%r)" % (self.kind, self.text)


def lex(text):
    """The tokens of text that the compiler sees, preprocessor lines and
    comments dropped."""
    toks, pos, at_line_start = [], 0, True
    n = len(text)
    while pos < n:
        if at_line_start:
            m = re.compile(r"[ \t]*#").match(text, pos)
            if m:
                # A directive runs to the end of its line, continued by a
                # backslash; a comment inside it may span lines.
                i = m.end()
                while i < n and text[i] != "\n":
                    if text.startswith("/*", i):
                        j = text.find("*/", i + 2)
                        i = n if j < 0 else j + 2
                    elif text.startswith("\\\n", i):
                        i += 2
                    else:
                        i += 1
                pos = i
                continue
        m = _TOKEN.match(text, pos)
        if not m:
            raise SyntaxError("cannot lex at offset %d: %r" % (pos, text[pos:pos + 20]))
        kind = m.lastgroup
        if kind == "nl":
            at_line_start = True
        elif kind not in ("ws", "comment"):
            at_line_start = False
            toks.append(Tok(kind, m.group(), m.start(), m.end()))
        elif kind == "comment" and "\n" in m.group():
            at_line_start = False
        pos = m.end()
    return toks


def match_brackets(toks):
    pairs, stack = {}, []
    closer = {")": "(", "]": "[", "}": "{"}
    for i, t in enumerate(toks):
        if t.kind != "punct":
            continue
        if t.text in "([{":
            stack.append(i)
        elif t.text in closer:
            if not stack or toks[stack[-1]].text != closer[t.text]:
                raise SyntaxError("unbalanced %r at offset %d" % (t.text, t.start))
            j = stack.pop()
            pairs[j] = i
            pairs[i] = j
    if stack:
        raise SyntaxError("unclosed %r at offset %d" % (toks[stack[-1]].text, toks[stack[-1]].start))
    return pairs


REL_SWAP = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "==": "!=", "!=": "=="}
BOUNDARY = {"<": "<=", "<=": "<", ">": ">=", ">=": ">"}
LOGIC = {"&&": "||", "||": "&&"}
ASSIGN_OPS = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="}
KEYWORDS = {
    "if", "else", "while", "do", "for", "switch", "case", "default", "return", "break",
    "continue", "goto", "sizeof", "typedef",
}
TYPE_WORDS = {
    "void", "char", "short", "int", "long", "float", "double", "signed", "unsigned", "_Bool",
    "bool", "const", "volatile", "static", "register", "extern", "struct", "union", "enum",
    "auto", "inline", "restrict", "_Atomic", "_Thread_local", "__thread", "_Alignas",
}
INT_TYPES = {
    "char", "short", "int", "long", "signed", "unsigned", "size_t", "ssize_t", "uintptr_t",
    "intptr_t", "ptrdiff_t", "off_t", "pid_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t",
    "int8_t", "int16_t", "int32_t", "int64_t", "uintmax_t", "intmax_t",
}
SPECIFIERS = {"static", "inline", "extern", "const", "volatile", "__inline", "__inline__"}


class Function:
    def __init__(self, name, rkind, body_open):
        self.name, self.rkind, self.body_open = name, rkind, body_open


class CFile:
    """The mutants of one C file."""

    def __init__(self, path, text, arid, enum_types=()):
        self.path, self.text = path, text
        self.arid = arid  # {"assert": set(), "log": set(), "commute": set()}
        self.enum_types = set(enum_types)
        self.toks = lex(text)
        self.pairs = match_brackets(self.toks)
        self.line_starts = line_starts_of(text)
        self.mutants = []
        self.func = None
        self.quiet = []  # token ranges whose operators are messages

    # ------------------------------------------------------------ helpers
    def t(self, i):
        return self.toks[i].text if 0 <= i < len(self.toks) else ""

    def add(self, op, edits):
        """A mutant of the statement in self.ctx (token indices of its first
        and last token), whose lines are what a test must execute to reach
        it."""
        before, after, first, last = describe(self.text, edits, self.line_starts)
        if before == after:
            return
        lo, hi = self.ctx
        m = Mutant(self.path, "c", self.func.name, op, first, last, edits, before, after)
        m.first_line = min(first, self.line_at(self.toks[lo].start))
        m.last_line = max(last, self.line_at(self.toks[hi].start))
        self.mutants.append(m)

    def line_at(self, offset):
        from mutant import line_of
        return line_of(self.line_starts, offset)

    def span(self, lo, hi):
        """The text of tokens lo..hi inclusive."""
        return self.text[self.toks[lo].start:self.toks[hi].end]

    # ------------------------------------------------------------ top level
    def run(self):
        toks, i, n = self.toks, 0, len(self.toks)
        decl_start = 0
        while i < n:
            t = toks[i].text
            if t == ";":
                decl_start = i + 1
            elif t == "{":
                close = self.pairs[i]
                fn = self.function_at(decl_start, i)
                if fn:
                    self.func = fn
                    self.stmt_list(i + 1, close)
                    self.func = None
                i = close + 1
                if fn or self.t(i) != ";":
                    decl_start = i
                continue
            elif t in "([":
                i = self.pairs[i] + 1
                continue
            i += 1
        return self.mutants

    def function_at(self, lo, brace):
        """The function whose body opens at brace, if it is one: the
        declaration lo..brace ends in a parameter list."""
        j = brace - 1
        # Attributes after the parameter list: __attribute__((...)).
        while j > lo and self.t(j) == ")" and self.t(self.pairs[j] - 1) == "__attribute__":
            j = self.pairs[j] - 2
        if j <= lo or self.t(j) != ")":
            return None
        lp = self.pairs[j]
        name_i = lp - 1
        if name_i < lo or self.toks[name_i].kind != "ident" or self.t(name_i) in KEYWORDS:
            return None
        rtype = []
        k = lo
        while k < name_i:
            if self.t(k) == "__attribute__" and self.t(k + 1) == "(":
                k = self.pairs[k + 1] + 1
                continue
            rtype.append(self.t(k))
            k += 1
        return Function(self.t(name_i), self.return_kind(rtype), brace)

    def return_kind(self, rtype):
        words = [w for w in rtype if w not in SPECIFIERS and not w.startswith("GB__")]
        if "*" in words:
            return "pointer"
        if any(w in ("bool", "_Bool") for w in words):
            return "bool"
        if words == ["void"]:
            return "void"
        if any(w in INT_TYPES for w in words) or (words and words[-1] in self.enum_types):
            return "int"
        return "other"

    # ------------------------------------------------------------ statements
    def stmt_list(self, lo, hi):
        """The statements lo..hi-1 of one block."""
        prev = None
        i = lo
        while i < hi:
            start = i
            i, kind = self.stmt(i, hi)
            cur = (start, i - 1, kind)
            if prev and prev[2] in ("call", "assign") and kind in ("call", "assign"):
                if self.dependent(prev, cur):
                    self.swap(prev, cur)
            prev = cur

    def names(self, lo, hi):
        """The identifiers of tokens lo..hi inclusive, but for the macros'
        constants (all capitals) and the callee of a call."""
        out = set()
        for k in range(lo, hi + 1):
            t = self.toks[k]
            if t.kind != "ident" or t.text in KEYWORDS or t.text.isupper():
                continue
            if self.t(k + 1) == "(" and k == lo:
                continue
            out.add(t.text)
        return out

    def written(self, lo, hi, kind):
        """What an assignment statement writes: the last name of its left
        side (the field or the variable), or of its operand for ++ and --."""
        if kind != "assign":
            return set()
        ops = list(self.assignments(lo, hi))
        end = ops[0] - 1 if ops else hi - 1
        start = lo
        if self.t(start) in ("++", "--"):
            start += 1
        names = [self.t(k) for k in range(start, end + 1) if self.toks[k].kind == "ident"]
        return {names[-1]} if names else set()

    def dependent(self, a, b):
        """Whether swapping two adjacent statements can change what they
        do: one writes a name the other mentions, or both are calls that
        share a name (either may write through it). Two statements with
        nothing in common are swapped to no effect, and such a mutant
        would only ever be argued equivalent."""
        (alo, ahi, akind), (blo, bhi, bkind) = a, b
        na, nb = self.names(alo, ahi - 1), self.names(blo, bhi - 1)
        wa, wb = self.written(alo, ahi, akind), self.written(blo, bhi, bkind)
        if wa & nb or wb & na:
            return True
        if akind == "call" and bkind == "call":
            ca, cb = self.t(alo), self.t(blo)
            if ca == cb and ca in self.arid["commute"]:
                return False
        if akind == "call" or bkind == "call":
            return bool(na & nb)
        return False

    def stmt(self, i, hi):
        """Walks the statement at i; returns the index after it and its kind
        (call, assign, or other)."""
        t = self.t(i)
        tok = self.toks[i]
        if t == "{":
            close = self.pairs[i]
            self.stmt_list(i + 1, close)
            return close + 1, "block"
        if t == ";":
            return i + 1, "empty"
        if t in ("if", "while") and self.t(i + 1) == "(":
            rp = self.pairs[i + 1]
            self.ctx = (i, rp)
            self.condition(i + 2, rp)
            j, _ = self.stmt(rp + 1, hi)
            if t == "if" and self.t(j) == "else":
                j, _ = self.stmt(j + 1, hi)
            return j, "other"
        if t == "do":
            j, _ = self.stmt(i + 1, hi)
            if self.t(j) == "while" and self.t(j + 1) == "(":
                rp = self.pairs[j + 1]
                self.ctx = (j, rp)
                self.condition(j + 2, rp)
                return rp + 2, "other"
            return j, "other"
        if t == "for" and self.t(i + 1) == "(":
            rp = self.pairs[i + 1]
            semis = self.top_level(i + 2, rp, ";")
            self.ctx = (i, rp)
            if len(semis) == 2:
                a, b = semis
                self.expr(i + 2, a)
                self.condition(a + 1, b)
                self.expr(b + 1, rp)
            j, _ = self.stmt(rp + 1, hi)
            return j, "other"
        if t == "switch" and self.t(i + 1) == "(":
            rp = self.pairs[i + 1]
            self.ctx = (i, rp)
            self.expr(i + 2, rp)
            j, _ = self.stmt(rp + 1, hi)
            return j, "other"
        if t in ("case", "default"):
            j = i
            while j < hi and self.t(j) != ":":
                j = self.pairs.get(j, j) + 1 if self.t(j) in "([" else j + 1
            return j + 1, "label"
        if tok.kind == "ident" and self.t(i + 1) == ":" and t not in KEYWORDS:
            return i + 2, "label"
        end = self.statement_end(i, hi)
        self.ctx = (i, min(end, len(self.toks) - 1))
        if t == "return":
            self.ret(i, end)
            return end + 1, "other"
        if t in ("break", "continue", "goto"):
            return end + 1, "other"
        # A macro that opens a loop (GB__LIST_EACH(l, h) body): a call not
        # followed by ; but by the statement it repeats.
        if tok.kind == "ident" and self.t(i + 1) == "(" and self.pairs[i + 1] + 1 < hi:
            after = self.pairs[i + 1] + 1
            nxt = self.toks[after]
            if nxt.text == "{" or nxt.kind == "ident":
                j, _ = self.stmt(after, hi)
                return j, "other"
        return end + 1, self.simple(i, end)

    def statement_end(self, i, hi):
        j = i
        while j < hi and self.t(j) != ";":
            j = self.pairs[j] + 1 if self.t(j) in "([{" else j + 1
        return j

    def top_level(self, lo, hi, what):
        out, j = [], lo
        while j < hi:
            if self.t(j) == what:
                out.append(j)
            j = self.pairs[j] + 1 if self.t(j) in "([{" else j + 1
        return out

    def is_declaration(self, i, end):
        a, b, c = self.t(i), self.t(i + 1), self.t(i + 2)
        if a in TYPE_WORDS or a == "typedef":
            return True
        if self.toks[i].kind != "ident":
            return False
        if i + 1 < end and self.toks[i + 1].kind == "ident":
            return True  # T x ...
        if b == "*" and (self.toks[i + 2].kind == "ident" or c in ("*", "const")):
            return True  # T *x ...
        return False

    def simple(self, i, end):
        """An expression statement or a declaration, i..end-1 (end is its ;)."""
        first = self.t(i)
        if first in self.arid["assert"] or first in self.arid["log"] or first in ("__asm__", "asm"):
            return "arid"
        if first == "(" and self.t(i + 1) == "void" and self.t(i + 2) == ")" and end == i + 4:
            return "arid"  # (void)x; only silences a warning
        if self.is_declaration(i, end):
            eq = self.top_level(i, end, "=")
            if eq:
                self.expr(eq[0] + 1, end)
            return "decl"
        self.expr(i, end)
        whole = [(self.toks[i].start, self.toks[end].end, ";")]
        ops = [j for j in self.assignments(i, end)]
        if ops or first in ("++", "--") or self.t(end - 1) in ("++", "--"):
            self.add("assign-del", whole)
            return "assign"
        last = end - 1
        if self.t(last) == ")":
            callee = self.pairs[last] - 1
            if callee >= i and (self.toks[callee].kind == "ident" or self.t(callee) in (")", "]")):
                self.add("call-del", whole)
                return "call"
        return "other"

    def assignments(self, lo, hi):
        j = lo
        while j < hi:
            if self.t(j) in ASSIGN_OPS:
                yield j
            j = self.pairs[j] + 1 if self.t(j) in "([{" else j + 1

    # ------------------------------------------------------------ operators
    def condition(self, lo, hi):
        """The condition lo..hi-1 (inside its parentheses)."""
        if lo >= hi:
            return
        self.expr(lo, hi)
        top = [self.t(j) for j in self.top_tokens(lo, hi)]
        if sum(t in ("==", "!=") for t in top) == 1 and not any(
                t in ("&&", "||", "?", "<", ">", "<=", ">=") for t in top):
            return  # a lone == or != negated is the rel mutant already made
        a, b = self.toks[lo].start, self.toks[hi - 1].end
        self.add("negate", [(a, a, "!("), (b, b, ")")])

    def top_tokens(self, lo, hi):
        j = lo
        while j < hi:
            yield j
            j = self.pairs[j] + 1 if self.t(j) in "([{" else j + 1

    def expr(self, lo, hi):
        """The token operators of the expression lo..hi-1."""
        j = lo
        while j < hi:
            t = self.toks[j]
            if t.text == "(" and self.is_message_call(j):
                # The arguments before the message are mutated as any.
                first = min(k for k in range(j + 1, self.pairs[j]) if self.toks[k].kind == "string")
                self.expr(j + 1, first)
                j = self.pairs[j] + 1
                continue
            if t.kind == "punct":
                if t.text in REL_SWAP:
                    self.add("rel", [(t.start, t.end, REL_SWAP[t.text])])
                if t.text in BOUNDARY:
                    self.add("boundary", [(t.start, t.end, BOUNDARY[t.text])])
                if t.text in LOGIC:
                    self.add("logic", [(t.start, t.end, LOGIC[t.text])])
            j += 1

    def is_message_call(self, lp):
        """A call whose arguments hold a string literal: a message and what
        it prints."""
        if lp == 0 or self.toks[lp - 1].kind != "ident" or self.t(lp - 1) in KEYWORDS:
            return False
        return any(self.toks[k].kind == "string" for k in range(lp + 1, self.pairs[lp]))

    def ret(self, i, end):
        if end == i + 1:
            return
        self.expr(i + 1, end)
        value = self.span(i + 1, end - 1)
        kind = self.func.rkind
        a, b = self.toks[i + 1].start, self.toks[end - 1].end
        if kind == "pointer":
            choices = ["NULL"]
        elif kind == "bool":
            choices = ["true", "false"]
        elif kind == "int":
            choices = ["0"]
        else:
            return
        same = {"NULL": ("NULL", "0", "(void *)0"), "0": ("0",), "true": ("true", "1"), "false": ("false", "0")}
        for c in choices:
            if value not in same[c]:
                self.add("return", [(a, b, c)])

    def swap(self, a, b):
        a_lo, a_hi, _ = a
        b_lo, b_hi, _ = b
        ta, tb = self.span(a_lo, a_hi), self.span(b_lo, b_hi)
        if ta == tb:
            return
        gap = self.text[self.toks[a_hi].end:self.toks[b_lo].start]
        self.ctx = (a_lo, b_hi)
        self.add("swap", [(self.toks[a_lo].start, self.toks[b_hi].end, tb + gap + ta)])


def enum_types(texts):
    """The names of the enum types the texts define (typedef enum {...} name),
    whose functions return integers."""
    names = set()
    for text in texts:
        for m in re.finditer(r"typedef\s+enum\s*\w*\s*\{[^}]*\}\s*(\w+)\s*;", text):
            names.add(m.group(1))
    return names


def mutants_of(path, text, arid, enums=()):
    return CFile(path, text, arid, enums).run()
