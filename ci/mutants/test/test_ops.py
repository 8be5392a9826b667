"""test_ops.py -- the engine's operators, each on the construct it is for,
and the lines it must leave alone (python3 -m unittest, from
ci/mutants/test/; ci/test.sh's mutants stage runs it)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.dont_write_bytecode = True

import c_ops  # noqa: E402
import sh_ops  # noqa: E402

ARID = {"assert": {"GB__ASSERT"}, "log": {"fprintf"}, "commute": {"GB__ADD"}}


def c(src):
    return [(m.op, m.after) for m in c_ops.mutants_of("t.c", src, ARID, {"kind_t"})]


def sh(src, lang="sh"):
    return [(m.op, m.after) for m in sh_ops.mutants_of("t.sh", src, lang)]


class COperators(unittest.TestCase):
    def test_relational_boundary_logic_and_negate(self):
        got = c("int f(int a, int b)\n{\n    if (a < b && b > 0)\n        return 1;\n    return 2;\n}\n")
        for want in [("rel", "if (a > b && b > 0)"), ("boundary", "if (a <= b && b > 0)"),
                     ("rel", "if (a < b && b < 0)"), ("boundary", "if (a < b && b >= 0)"),
                     ("logic", "if (a < b || b > 0)"), ("negate", "if (!(a < b && b > 0))")]:
            self.assertIn(want, got)

    def test_a_lone_equality_is_swapped_not_also_negated(self):
        got = c("void f(int a)\n{\n    if (a == 3)\n        g();\n}\n")
        self.assertIn(("rel", "if (a != 3)"), got)
        self.assertNotIn("negate", [op for op, _ in got])

    def test_call_and_assignment_deleted_declaration_kept(self):
        got = c("void f(int *p)\n{\n    int n = 3;\n    *p = n;\n    g(p);\n    n++;\n}\n")
        self.assertIn(("assign-del", ";"), got)
        self.assertIn(("call-del", ";"), got)
        self.assertEqual(sum(op == "assign-del" for op, _ in got), 2)  # *p = n and n++, not int n = 3
        self.assertEqual(sum(op == "call-del" for op, _ in got), 1)

    def test_returns_by_type(self):
        self.assertIn(("return", "return NULL;"), c("char *f(char *p)\n{\n    return p;\n}\n"))
        got = c("bool f(int a)\n{\n    return a > 1;\n}\n")
        self.assertIn(("return", "return true;"), got)
        self.assertIn(("return", "return false;"), got)
        self.assertIn(("return", "return 0;"), c("size_t f(size_t n)\n{\n    return n;\n}\n"))
        self.assertIn(("return", "return 0;"), c("kind_t f(void)\n{\n    return K;\n}\n"))
        self.assertNotIn("return", [op for op, _ in c("struct s f(void)\n{\n    return x;\n}\n")])
        # A value that is already the replacement is not replaced by it.
        self.assertNotIn(("return", "return NULL;"), c("char *f(void)\n{\n    return NULL;\n}\n"))

    def test_adjacent_statements_swapped_only_when_one_touches_the_other(self):
        got = c("void f(struct n *b, struct r *r)\n{\n    b->next = r->first;\n    r->first = b;\n}\n")
        self.assertIn(("swap", "r->first = b; b->next = r->first;"), got)
        got = c("void f(struct r *r)\n{\n    r->a = 1;\n    r->b = 2;\n}\n")
        self.assertNotIn("swap", [op for op, _ in got])
        got = c("void f(void)\n{\n    GB__ADD(x, 1);\n    GB__ADD(y, 1);\n}\n")
        self.assertNotIn("swap", [op for op, _ in got])

    def test_asserts_logging_and_messages_are_arid(self):
        got = c("void f(int a)\n{\n    GB__ASSERT(a < 3);\n    fprintf(stderr, \"%d\", a < 3);\n}\n")
        self.assertEqual(got, [])
        got = c("void f(int a, int n)\n{\n    if (a)\n        gb__die(\"%s: %d\", a < n ? \"x\" : \"y\", n - 1);\n}\n")
        self.assertIn(("call-del", "gb__die(\"%s: %d\", a < n ? \"x\" : \"y\", n - 1);"[0:0] + ";"), got)
        self.assertFalse([m for m in got if m[0] in ("rel", "boundary")])
        # The arguments before the message are mutated as any.
        got = c("void f(int a)\n{\n    check(a < 3, \"a is %d\", a);\n}\n")
        self.assertIn(("rel", "check(a > 3, \"a is %d\", a);"), got)

    def test_preprocessor_comments_and_file_level_are_left_alone(self):
        src = "#define MAX(a, b) ((a) > (b) ? (a) : (b))\n/* a < b */\nstatic int t[2] = {1 < 2, 0};\n"
        self.assertEqual(c(src), [])

    def test_a_loop_macro_body_is_a_statement(self):
        got = c("void f(list *h)\n{\n    EACH(l, h)\n        if (l->x > 1)\n            g(l);\n}\n")
        self.assertIn(("rel", "if (l->x < 1)"), got)
        self.assertIn(("call-del", ";"), got)

    def test_lines_to_reach_span_the_statement(self):
        ms = c_ops.mutants_of("t.c", "void f(int a, int b)\n{\n    g(a,\n      b < 3);\n}\n", ARID, set())
        rel = [m for m in ms if m.op == "rel"][0]
        self.assertEqual((rel.line, rel.first_line, rel.last_line), (4, 3, 4))


class ShellOperators(unittest.TestCase):
    def test_test_words(self):
        got = sh("if [[ $a -lt 3 && \"$b\" == x ]]; then\n    echo y\nfi\n")
        for want in [("rel", 'if [[ $a -gt 3 && "$b" == x ]]; then'), ("boundary", 'if [[ $a -le 3 && "$b" == x ]]; then'),
                     ("rel", 'if [[ $a -lt 3 && "$b" != x ]]; then'), ("logic", 'if [[ $a -lt 3 || "$b" == x ]]; then'),
                     ("cond-del", "if true; then")]:
            self.assertIn(want, got)

    def test_arithmetic(self):
        got = sh("((n > 0)) && n=$((n - 1))\nx=$((y * 1024))\n")
        self.assertIn(("rel", "((n < 0)) && n=$((n - 1))"), got)
        self.assertIn(("boundary", "((n >= 0)) && n=$((n - 1))"), got)
        self.assertIn(("arith", "((n > 0)) && n=$((n - 2))"), got)
        self.assertIn(("arith", "((n > 0)) && n=$((n - 0))"), got)
        self.assertIn(("cond-del", "n=$((n - 1))"), got)
        # A scale multiplied is a unit, not a boundary.
        self.assertFalse([a for op, a in got if "1025" in a or "1023" in a])

    def test_anchors_of_regexes_and_their_variables(self):
        got = sh("f() {\n    local re='^[0-9]+$'\n    [[ $1 =~ $re ]]\n    [[ $2 =~ ^a ]]\n}\n")
        self.assertIn(("anchor", "local re='[0-9]+$'"), got)
        self.assertIn(("anchor", "local re='^[0-9]+'"), got)
        self.assertIn(("anchor", "[[ $2 =~ a ]]"), got)

    def test_strings_comments_and_heredocs_are_messages(self):
        src = "# if [[ 1 -lt 2 ]]\necho \"$((a + 1)) -lt\"\ncat <<EOF\n[[ 1 -lt 2 ]]\nEOF\n"
        self.assertEqual(sh(src), [])

    def test_awk_programs_in_a_script(self):
        got = sh("n=$(awk -F'\\t' -v x=1 '$2 > x { c++ } END { print c > \"out\"; printf \"%d\\n\", c - 1 > \"/dev/stderr\" }' f)\n")
        self.assertIn(("rel", "n=$(awk -F'\\t' -v x=1 '$2 < x { c++ } END { print c > \"out\"; printf \"%d\\n\", c - 1 > \"/dev/stderr\" }' f)"), got)
        self.assertIn(("cond-del", "n=$(awk -F'\\t' -v x=1 ' { c++ } END { print c > \"out\"; printf \"%d\\n\", c - 1 > \"/dev/stderr\" }' f)"), got)
        # print's > is a redirection, and a print to stderr is a message.
        self.assertEqual(sum(op == "rel" for op, _ in got), 1)
        self.assertFalse([a for op, a in got if op == "arith"])

    def test_awk_file(self):
        got = sh("/^#/ { next }\n{ for (i = 3; i <= NF; i++) if (match($i, \"^x$\")) n++ }\n", "awk")
        for want in [("anchor", "/#/ { next }"), ("cond-del", "{ next }"),
                     ("arith", "{ for (i = 4; i <= NF; i++) if (match($i, \"^x$\")) n++ }"),
                     ("anchor", "{ for (i = 3; i <= NF; i++) if (match($i, \"x$\")) n++ }"),
                     ("cond-del", "{ for (i = 3; i <= NF; i++) if (1) n++ }")]:
            self.assertIn(want, got)


if __name__ == "__main__":
    unittest.main()
