"""coverage.py -- which test executes which line: the coverage pass.

Every test runs once, without a mutant, in a tree built with gcov's
instrumentation (cc-coverage), each with its counts written under a
directory of its own (GCOV_PREFIX) and with every bash it starts tracing
the lines it runs (trace-env.sh). What one test executed is then read
with gcov for C and from the traces for the shell; an awk program counts
as executed where the shell line that runs it was.

The result says, per file and line, which tests execute it, which C
lines this build compiles at all (a line under an #if it leaves out is
"not built", not "uncovered"), how long each test took and how much it
held, and which tests fail without any mutant (those judge nothing). It
is kept in the coverage tree and used again while the sources are the
same.
"""
import concurrent.futures
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess

import runner

HERE = os.path.dirname(os.path.abspath(__file__))
# The coverage pass's tests in flight, for an interrupt to end.
RUNNING = runner.Running()
_TRACE = re.compile(r"^\++(/[^:\n]*):(\d+):", re.M)


def digest(root, files):
    """A digest of the tree's files that a coverage result depends on (the
    documentation and the engine's own files do not, but for those of the
    coverage pass), which it belongs to."""
    h = hashlib.sha1()
    for rel in sorted(files):
        if rel.endswith(".md") or rel.startswith(("mutants/", "ci/mutants/")) and not rel.endswith(
                ("cc-coverage", "gcov-flush.c", "trace-env.sh", "coverage.py")):
            continue
        h.update(rel.encode() + b"\0")
        with open(os.path.join(root, rel), "rb") as f:
            h.update(hashlib.sha1(f.read()).digest())
    return h.hexdigest()


class Coverage:
    def __init__(self, data):
        self.tests = data["tests"]  # name -> {kind, seconds, rss_kib, status}
        self.lines = {p: {int(k): v for k, v in d.items()} for p, d in data["lines"].items()}
        self.built = {p: set(v) for p, v in data["built"].items()}

    def tests_of(self, path, first, last):
        out = set()
        for n in range(first, last + 1):
            out.update(self.lines.get(path, {}).get(n, ()))
        return out

    def is_built(self, path, first, last):
        """Whether this build compiles any line of path first..last (C
        only: a shell or awk line is always there)."""
        lines = self.built.get(path)
        if lines is None:
            return False
        return any(n in lines for n in range(first, last + 1))

    def ok_tests(self):
        return [n for n, t in self.tests.items() if t["status"] in (runner.PASS, runner.SKIP)]


class Chosen:
    """In place of a coverage pass (--tests): every mutant is judged by the
    tests whose names match a pattern, none is uncovered, and any line is
    taken as built (one that is not gives the original program)."""

    def __init__(self, pattern, specs):
        self.names = sorted(n for n in specs if pattern.search(n))
        self.tests = {}

    def tests_of(self, path, first, last):
        return set(self.names)

    def is_built(self, path, first, last):
        return True

    def ok_tests(self):
        return self.names


def configure(src, build, cmake_args, log):
    cmd = ["cmake", "-S", src, "-B", build, "-G", "Ninja"] + cmake_args
    with open(log, "w") as f:
        if subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode:
            raise SystemExit("mutants: configuring %s failed; see %s" % (build, log))


def build(build_dir, log, jobs, running=None):
    return runner.command(["cmake", "--build", build_dir, "--parallel", str(jobs)], log,
                          running or runner.Running())


def run_pass(cfg, src, work, files, jobs, say):
    """The coverage of the tree at src (a copy of the project), built in
    work/cov; cached there for the same sources."""
    cov_build = os.path.join(work, "cov")
    cache = os.path.join(cov_build, "coverage.json")
    key = digest(src, files) + ("" if cfg.use_bats else "-nobats")
    if os.path.exists(cache):
        with open(cache) as f:
            data = json.load(f)
        if data.get("digest") == key:
            say("coverage: the sources are those of the last pass; its coverage is used again")
            return Coverage(data)
    os.makedirs(cov_build, exist_ok=True)
    cc = os.path.join(HERE, "cc-coverage")
    configure(src, cov_build, cfg.tiers[0].cmake + cfg.coverage + ["-DCMAKE_C_COMPILER=" + cc],
              os.path.join(work, "cov-configure.log"))
    say("coverage: building the instrumented tree (%s)" % cov_build)
    for old in glob.glob(os.path.join(cov_build, "**", "*.gcda"), recursive=True):
        os.remove(old)
    if not build(cov_build, os.path.join(work, "cov-build.log"), jobs):
        raise SystemExit("mutants: the instrumented tree does not build; see %s" % os.path.join(work, "cov-build.log"))
    specs = [s for s in runner.ctest_specs(cov_build) if s.name not in cfg.skip_tests]
    specs += runner.bats_specs(src, cfg.bats_files())
    runs = os.path.join(work, "cov-runs")
    shutil.rmtree(runs, ignore_errors=True)
    say("coverage: running %d tests once each, %d at a time, to learn which lines each executes" % (len(specs), jobs))
    running = RUNNING
    lines, built, tests = {}, {}, {}
    awk_files = [p for p, lang in cfg.files().items() if lang == "awk"]

    def one(i_spec):
        i, spec = i_spec
        d = os.path.join(runs, str(i))
        for sub in ("gcda", "trace", "tmp"):
            os.makedirs(os.path.join(d, sub))
        env = {"GCOV_PREFIX": os.path.join(d, "gcda"), "GCOV_PREFIX_STRIP": "0",
               "BASH_ENV": os.path.join(HERE, "trace-env.sh"), "GBM_TRACE_DIR": os.path.join(d, "trace"),
               "CC": cc, "TMPDIR": os.path.join(d, "tmp")}
        if spec.kind == "bats":
            spec = runner.Spec(spec.name, spec.kind, spec.command[:1] + ["--no-tempdir-cleanup"] + spec.command[1:],
                               spec.cwd, spec.env)
        res = runner.run(spec, env, 3600, 0, running, os.path.join(d, "output"))
        hit = read_gcov(d, src)
        read_traces(os.path.join(d, "trace"), src, cfg, awk_files, hit)
        shutil.rmtree(d, ignore_errors=True)
        return spec.name, spec.kind, res, hit

    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for name, kind, res, hit in pool.map(one, enumerate(specs)):
            tests[name] = {"kind": kind, "seconds": res.seconds, "rss_kib": res.rss_kib, "status": res.status}
            if res.status not in (runner.PASS, runner.SKIP):
                say("coverage: %s fails without any mutant (%s); it judges no mutant:\n%s"
                    % (name, res.status, indent(res.tail[-800:])))
                continue
            for path, (executed, compiled) in hit.items():
                per = lines.setdefault(path, {})
                for n in executed:
                    per.setdefault(n, []).append(name)
                if compiled is not None:
                    built.setdefault(path, set()).update(compiled)
    failing = [n for n, t in tests.items() if t["status"] not in (runner.PASS, runner.SKIP)]
    if len(failing) * 10 > len(tests):
        raise SystemExit("mutants: %d of the %d tests fail without any mutant; the engine judges nothing "
                         "until they pass" % (len(failing), len(tests)))
    data = {"digest": key, "tests": tests, "lines": lines, "built": {p: sorted(v) for p, v in built.items()}}
    with open(cache, "w") as f:
        json.dump(data, f)
    return Coverage(json.loads(json.dumps(data)))


def indent(text):
    return "\n".join("    " + l for l in text.splitlines())


def read_gcov(d, src):
    """{path: (executed lines, compiled lines)} of the gcov counts a test
    left under d/gcda; paths relative to src."""
    prefix = os.path.join(d, "gcda")
    gcdas = glob.glob(os.path.join(prefix, "**", "*.gcda"), recursive=True)
    hit = {}
    for gcda in gcdas:
        notes = gcda[len(prefix):][:-len(".gcda")] + ".gcno"
        if os.path.exists(notes):
            os.symlink(notes, gcda[:-len(".gcda")] + ".gcno")
    for i in range(0, len(gcdas), 64):
        out = subprocess.run(["gcov", "--json-format", "--stdout"] + gcdas[i:i + 64], cwd=d,
                             capture_output=True, text=True).stdout
        for doc in out.splitlines():
            if not doc.startswith("{"):
                continue
            for f in json.loads(doc).get("files", []):
                path = os.path.normpath(os.path.join(d, f["file"]))
                rel = os.path.relpath(path, src)
                if rel.startswith(".."):
                    continue
                executed, compiled = hit.setdefault(rel, (set(), set()))
                for l in f["lines"]:
                    compiled.add(l["line_number"])
                    if l["count"]:
                        executed.add(l["line_number"])
    return hit


def read_traces(d, src, cfg, awk_files, hit):
    """Adds to hit the shell lines traced under d (no compiled set: every
    shell line is there), and the awk files among awk_files that a traced
    command names."""
    installed = cfg.installed
    for trace in glob.glob(os.path.join(d, "*.trace")):
        with open(trace, encoding="utf-8", errors="replace") as f:
            text = f.read()
        for path, line in set(_TRACE.findall(text)):
            rel = os.path.relpath(os.path.normpath(path), src)
            if rel.startswith(".."):
                # A script run through a symbolic link is traced under the
                # link's path (the test's files are kept until this read).
                rel = os.path.relpath(os.path.realpath(path), os.path.realpath(src))
            if rel.startswith(".."):
                rel = None
                for there, here in installed:
                    k = path.find("/" + there + "/")
                    if k >= 0:
                        rel = os.path.join(here, path[k + len(there) + 2:])
                        break
                if rel is None:
                    continue
            executed, _ = hit.setdefault(rel, (set(), None))
            executed.add(int(line))
        # An awk program named in a traced command (awk -f PATH, from the
        # kit's shell or from a test itself) ran in this test: line 0
        # stands for the whole program (engine.py, tests_for).
        for rel in awk_files:
            if "/" + rel in text or any("/" + there + "/" + rel[len(here) + 1:] in text
                                        for there, here in installed if rel.startswith(here + "/")):
                hit.setdefault(rel, (set(), None))[0].add(0)
    for rel, (executed, _) in hit.items():
        if rel.endswith(".c") or rel.endswith(".h"):
            continue
        for first, lines in process_substitutions(os.path.join(src, rel)).items():
            if first in executed:
                executed.update(lines)


_FUNCTION = re.compile(r"^(?:function\s+)?[A-Za-z_][\w:.-]*\s*\(\)")
_FUNCTIONS = {}


def process_substitutions(path):
    """{first line of a function: the lines of its body that hold a process
    substitution} of a shell file. bash traces the commands of a process
    substitution inside a function with the line the function's definition
    starts on (bash 5.2), a line that is otherwise never traced: such a
    trace says that one of them ran, and each counts as executed (the
    engine then tries its mutants, where an uncovered verdict would have
    judged none). A body ends at the first line that is a lone } in the
    first column, as the kit writes its functions."""
    if path not in _FUNCTIONS:
        found, first = {}, None
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                for n, text in enumerate(f, 1):
                    if _FUNCTION.match(text):
                        first = n
                    elif first is not None and text.rstrip() == "}":
                        first = None
                    elif first is not None and "<(" in text:
                        found.setdefault(first, set()).add(n)
        except OSError:
            pass
        _FUNCTIONS[path] = found
    return _FUNCTIONS[path]
