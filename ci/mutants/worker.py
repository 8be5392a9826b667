"""worker.py -- a copy of the project, its build trees, and the mutants
tried in them one at a time.

The project's own files are never written: each worker mutates a copy of
them (build/mutants/w<N>/src), made once and brought up to date at every
run, and builds it in trees of its own, one per tier (w<N>/<preset>),
reused from run to run, so that a mutant costs the rebuild of the objects
its file is in and a relink. The tree of a later tier is made the first
time a mutant gets that far. Every file is put back byte for byte after
its mutant, and checked.
"""
import hashlib
import os
import shutil
import threading
import time

import coverage
import runner
from mutant import INVALID, KILLED, SURVIVED, TIMEOUT


def sync(root, files, dest):
    """Makes dest hold exactly files (paths relative to root) as they are
    in root; a file whose content is already the same is not touched, so
    the build trees rebuild only what changed."""
    wanted = set(files)
    for rel in files:
        a, b = os.path.join(root, rel), os.path.join(dest, rel)
        with open(a, "rb") as f:
            data = f.read()
        try:
            with open(b, "rb") as f:
                same = f.read() == data
        except OSError:
            same = False
        if not same:
            os.makedirs(os.path.dirname(b), exist_ok=True)
            with open(b, "wb") as f:
                f.write(data)
        shutil.copymode(a, b)
    for dirpath, dirnames, filenames in os.walk(dest):
        for name in filenames:
            rel = os.path.relpath(os.path.join(dirpath, name), dest)
            if rel not in wanted:
                os.remove(os.path.join(dirpath, name))


def write_now(path, data):
    """Writes data to path with a modification time of now, read from the
    fine clock: the build must see the file as newer than its object even
    when both fall in one tick of the file system's coarse clock."""
    with open(path, "wb") as f:
        f.write(data)
    now = time.time_ns()
    os.utime(path, ns=(now, now))


class Tree:
    """One tier's build tree of a worker."""

    def __init__(self, tier, path):
        self.tier, self.path = tier, path
        self.ready = False
        self.dirty = False  # it holds the objects of a mutant since put back
        self.specs = {}


class Worker:
    def __init__(self, n, cfg, work, jobs_per_build, coverage_data, say):
        self.n, self.cfg, self.say = n, cfg, say
        self.home = os.path.join(work, "w%d" % n)
        self.src = os.path.join(self.home, "src")
        self.jobs = jobs_per_build
        self.cov = coverage_data
        self.running = runner.Running()
        self.trees = [Tree(t, os.path.join(self.home, t.name)) for t in cfg.tiers]
        self.current = None  # (path, original bytes) while a mutant is in place
        self.lock = threading.Lock()

    def prepare(self, root, files):
        os.makedirs(self.src, exist_ok=True)
        sync(root, files, self.src)
        self.ready(self.trees[0])

    def ready(self, tree):
        """Configures and builds tree, unmutated, the first time."""
        if tree.ready:
            return
        log = os.path.join(self.home, tree.tier.name + "-build.log")
        if not os.path.exists(os.path.join(tree.path, "build.ninja")):
            coverage.configure(self.src, tree.path, tree.tier.cmake, os.path.join(self.home, tree.tier.name + "-configure.log"))
        if not coverage.build(tree.path, log, self.jobs):
            raise SystemExit("mutants: the unmutated tree does not build in %s; see %s" % (tree.path, log))
        tree.specs = {s.name: s for s in runner.ctest_specs(tree.path)}
        if tree is self.trees[0]:
            for s in runner.bats_specs(self.src, self.cfg.bats_files()):
                tree.specs[s.name] = s
        tree.ready = True

    def restore(self):
        with self.lock:
            self._restore()

    def _restore(self):
        if self.current:
            path, data = self.current
            write_now(path, data)
            with open(path, "rb") as f:
                if hashlib.sha1(f.read()).digest() != hashlib.sha1(data).digest():
                    raise SystemExit("mutants: %s was not restored byte for byte" % path)
            self.current = None

    def try_mutant(self, m, tests, stop):
        """Runs tests (names, in order) against mutant m, tier by tier,
        until one fails; sets m's verdict. A C mutant that survives the
        first tier is tried in the next ones with the tests they run."""
        path = os.path.join(self.src, m.path)
        with open(path, "rb") as f:
            original = f.read()
        t0 = time.monotonic()
        with self.lock:
            if stop.is_set():
                return
            self.current = (path, original)
            write_now(path, m.apply(original.decode("utf-8")).encode("utf-8"))
        try:
            m.verdict = SURVIVED
            for k, tree in enumerate(self.trees):
                if k and m.lang != "c":
                    break
                names = [t for t in tests if tree.tier.runs(t) and (k == 0 or not runner.is_bats(t))]
                if not names:
                    continue
                self.ready(tree)
                if m.lang != "c" and tree.dirty and not self.build(m, tree, k, None, stop):
                    return
                tree.dirty = tree.dirty or m.lang == "c"
                if self.judge(m, tree, k, names, stop):
                    return
        finally:
            self.restore()
            m.seconds = time.monotonic() - t0

    # How many times a kill the project argues cannot happen is tried
    # again before it is called a contradiction.
    AGAIN = 2

    def confirm(self, m, log_dir, stop):
        """Tries m again, AGAIN times, with the tests that killed it, when
        mutants/equivalent.tsv argues it equivalent: a kill that does not
        repeat is a test that fails now and then (a busy machine, a race
        in the test), not a refutation of the argument. Records, in
        m.extra["flaky"], the passes seen and where the first failure's
        output was kept; m's verdict and test are those of the first try."""
        killer = m.extra.get("killer")
        if not killer or stop.is_set():
            return
        kept = os.path.join(log_dir, "killed-%s.log" % m.id)
        try:
            shutil.copyfile(os.path.join(self.home, "test.log"), kept)
        except OSError:
            kept = ""
        first = (m.verdict, m.test, m.seconds, m.tests_run, m.test_seconds)
        passes = 0
        for _ in range(self.AGAIN):
            self.try_mutant(m, list(killer), stop)
            if stop.is_set() or not m.verdict:
                break
            passes += m.verdict == SURVIVED
        m.verdict, m.test, m.seconds, m.tests_run, m.test_seconds = first
        if passes:
            m.extra["flaky"] = (passes, kept)

    def build(self, m, tree, k, target, stop):
        """Builds target (a path in tree; None: everything) with m in place;
        False, with m's verdict set, when it does not build or the run is
        being stopped."""
        log = os.path.join(self.home, "mutant-build.log")
        cmd = ["ninja", "-C", tree.path, "-j", str(self.jobs)] + ([target] if target else [])
        if runner.command(cmd, log, self.running):
            if not target:
                tree.dirty = False
            return True
        if stop.is_set():
            m.verdict = ""
        else:
            m.verdict, m.test = INVALID, first_error(log) + ("" if k == 0 else " [%s]" % tree.tier.name)
        return False

    @staticmethod
    def target_of(tree, spec):
        """The one build target a test needs (its program), or None when it
        needs the whole tree (a script that installs it, a bats test)."""
        if spec.kind != "ctest":
            return None
        rel = os.path.relpath(spec.command[0], tree.path)
        return None if rel.startswith("..") else rel

    # The bats tests tried one by one before the rest of a file's are run
    # in one bats: a run pays the file's setup (the kit's compiles its
    # programs) once, where most mutants fall to the first tests tried.
    ALONE = 3

    def judge(self, m, tree, k, names, stop):
        """Runs names in tree until one fails: True when one did (m's
        verdict set), or when the run is being stopped."""
        tag = "" if k == 0 else " [%s]" % tree.tier.name
        runs = []  # (names, spec): one test, or one batch of a bats file's
        batches = {}
        alone = 0
        for name in names:
            spec = tree.specs.get(name)
            if spec is None:
                continue
            if spec.kind == "bats" and alone >= self.ALONE:
                batches.setdefault(spec.command[-1], []).append(name)
                continue
            alone += spec.kind == "bats"
            runs.append(([name], spec))
        for rel, batch in batches.items():
            runs.append((batch, runner.bats_batch(self.src, rel, [tree.specs[n] for n in batch])))
        built = set()
        for batch, spec in runs:
            if stop.is_set():
                m.verdict = ""
                return True
            # A C mutant is built as its tests need it: the program of the
            # first one tried is most often all it takes to kill it.
            if m.lang == "c":
                target = self.target_of(tree, spec)
                if target not in built and "" not in built:
                    if not self.build(m, tree, k, target, stop):
                        return True
                    built.add(target or "")
            limit = rss = 0
            for name in batch:
                # Without a coverage pass (--tests), a test of a few seconds.
                base = self.cov.tests.get(name, {"seconds": 6.0, "rss_kib": 0})
                limit += (1 if k == 0 else 3) * max(10.0, 10 * base["seconds"])
                rss = max(rss, (1 if k == 0 else 4) * max(2 * 1024 * 1024, 4 * base["rss_kib"]))
            res = runner.run(spec, {}, limit, rss, self.running, os.path.join(self.home, "test.log"))
            m.tests_run += len(batch)
            m.test_seconds += res.seconds
            failed = runner.first_failed(spec, res.text)
            who = batch[0] if len(batch) == 1 else failed or "%s (one of %d)" % (batch[0], len(batch))
            if res.status != runner.PASS and res.status != runner.SKIP:
                m.extra["killer"] = [failed] if failed else batch
            if res.status in (runner.FAIL, runner.MEMORY):
                m.verdict = KILLED
                m.test = who + tag + (" (past its memory guard)" if res.status == runner.MEMORY else "")
                return True
            if res.status == runner.TIMEOUT:
                m.verdict, m.test = TIMEOUT, "%s%s (past %.0f s)" % (who, tag, limit)
                return True
        return False


def first_error(log):
    with open(log, errors="replace") as f:
        for line in f:
            if "error:" in line:
                return "does not compile: " + line.strip()[:200]
    return "does not build"
