"""engine.py -- giveback's mutation engine (run it as ci/mutants.sh).

Makes small plausible bugs in the lines in scope, one at a time, and asks
the tests whether they notice: the kill matrix of the poisons, widened
from a few hand-made faults to every line. A mutant no test fails is a
behaviour no test holds: a test is missing, or the mutant changes
nothing, which mutants/equivalent.tsv must then argue. The engine exits 1
while any mutant survives or any line in scope is executed by no test
without such an argument.

The steps:
  1. the mutants of the files in scope, or of the lines changed since a
     revision (--since), or of the files named (--files);
  2. the coverage pass (coverage.py): which test executes which line,
     once per set of sources;
  3. the workers (worker.py): each mutant built in a copy of the tree and
     run against the tests that execute its line, fastest first, until
     one fails; a test never runs for a mutant whose line it does not
     execute, since it cannot tell the mutant from the original;
  4. the report (report.py): build/mutants/mutants.tsv and mutants.md,
     the survivors, and the last line,
     "mutants: K killed, S survived, E equivalent, U uncovered, of N".
"""
import argparse
import collections
import os
import re
import queue
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # the project's files are never written, its engine's included

import config  # noqa: E402
import coverage  # noqa: E402
import generate  # noqa: E402
import report  # noqa: E402
from mutant import (EQUIVALENT, INVALID, KILLED, NOT_BUILT, NOT_RUN, SURVIVED, TIMEOUT,  # noqa: E402
                    UNCOVERED, line_starts_of)
from worker import Worker  # noqa: E402


def say(msg):
    print(msg, flush=True)


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="ci/mutants.sh",
        description="Mutation testing: small bugs made in the lines in scope, one at a time, each run "
                    "against the tests that execute its line.")
    scope = p.add_mutually_exclusive_group()
    scope.add_argument("--since", metavar="REV", help="the lines changed since REV (committed or not)")
    scope.add_argument("--files", metavar="PATH", nargs="+", help="every line of these files")
    scope.add_argument("--all", action="store_true", help="every file in scope (mutants/config.ini)")
    p.add_argument("--budget", metavar="SECONDS", type=float, default=0,
                   help="stop starting mutants this long after the first one starts (the coverage pass and "
                        "the builds before it are not counted; 0: no limit); those left are not-run")
    p.add_argument("--jobs", metavar="N", type=int, default=0, help="mutants tried at once (default: the cores)")
    p.add_argument("--list", action="store_true", help="list the mutants and stop")
    p.add_argument("--mutant", metavar="ID", action="append", default=[],
                   help="only the mutant of this id (mutants.tsv's first column; repeatable)")
    p.add_argument("--resume", metavar="TSV",
                   help="carry over the kills of an earlier run's mutants.tsv (killed, timeout, and what did not "
                        "compile) to the mutants of the same id, which names the mutated text, and try only the "
                        "rest: a run cut by its budget or an interrupt goes on where it stopped; survivors are "
                        "tried again")
    p.add_argument("--tests", metavar="REGEX",
                   help="judge by the tests whose names match REGEX, without a coverage pass: the quick "
                        "question whether a new test kills a mutant (with --mutant)")
    p.add_argument("--argue", nargs=2, metavar=("ID", "WHY"),
                   help="append to mutants/equivalent.tsv the row of mutant ID of the last run "
                        "(build/mutants/mutants.tsv) with the argument WHY, and stop")
    p.add_argument("--root", metavar="DIR", default=os.path.dirname(os.path.dirname(HERE)),
                   help="the project (default: this one)")
    p.add_argument("--out", metavar="DIR", help="where to build and report (default: ROOT/build/mutants)")
    a = p.parse_args(argv)
    if a.jobs < 0 or a.budget < 0:
        p.error("--jobs and --budget take a number of 0 or more")
    if a.tests:
        try:
            a.tests_re = re.compile(a.tests)
        except re.error as e:
            p.error("--tests %s: %s" % (a.tests, e))
    return a


def tree_files(root):
    """The project's files as a checkout has them: tracked, and untracked
    but not ignored."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         cwd=root, capture_output=True, check=True).stdout
    return [p for p in out.decode().split("\0") if p and os.path.isfile(os.path.join(root, p))]


def select(args, cfg, root):
    """The mutants in scope, and a note of what was taken."""
    files = cfg.files()
    if args.files:
        chosen = {}
        for p in args.files:
            # From here, when that names a file of the project; else from
            # the project's top.
            rel = os.path.relpath(os.path.abspath(p), root)
            if rel.startswith("..") or not os.path.exists(os.path.join(root, rel)):
                rel = os.path.normpath(p)
            if rel not in files:
                raise SystemExit("mutants: --files %s: not a file in scope (mutants/config.ini, [scope])" % p)
            chosen[rel] = files[rel]
        files = chosen
    changed = None
    if args.since:
        changed = generate.changed_lines(root, args.since, list(files))
        files = {p: l for p, l in files.items() if p in changed}
    mutants, texts, errors = generate.all_mutants(root, files, cfg.arid)
    for e in errors:
        say("mutants: cannot read %s" % e)
    if changed is not None:
        starts = {p: line_starts_of(t) for p, t in texts.items()}
        mutants = [m for m in mutants if generate.touches(m, changed[m.path], starts[m.path])]
    if errors:
        raise SystemExit(2)
    return mutants, files, changed


def host_lines(cfg, root, files):
    """For each awk file, the shell lines that run it: where its lines are
    executed, as far as the coverage pass can tell."""
    hosts = {}
    sh = [p for p, l in cfg.files().items() if l == "sh"]
    for p, lang in files.items():
        if lang != "awk":
            continue
        base = os.path.basename(p)
        for s in sh:
            with open(os.path.join(root, s), encoding="utf-8") as f:
                for n, line in enumerate(f, 1):
                    if base in line and not line.lstrip().startswith("#"):
                        hosts.setdefault(p, []).append((s, n, n))
    return hosts


def tests_for(m, cov, hosts):
    if m.lang == "awk" and m.extra.get("host"):
        spans = [m.extra["host"]]
    elif m.lang == "awk" and m.path in hosts:
        spans = hosts[m.path]
    else:
        spans = [(m.path, m.first_line or m.line, m.last_line)]
    if m.lang == "awk":
        # The tests that ran the program by its path (coverage.py: line 0).
        spans = spans + [(m.path, 0, 0)]
    names = set()
    for path, a, b in spans:
        names |= cov.tests_of(path, a, b)
    ok = set(cov.ok_tests())
    return sorted(names & ok, key=lambda n: (cov.tests.get(n, {}).get("seconds", 0), n))


class Schedule:
    """The mutants to try, in rounds: every line's first mutant before any
    line's second, so that a budget cut spreads over the lines; within a
    round, a worker keeps to the file it last built."""

    def __init__(self, mutants):
        by_line = collections.defaultdict(list)
        for m in mutants:
            by_line[(m.path, m.line)].append(m)
        self.rounds = collections.defaultdict(lambda: collections.defaultdict(collections.deque))
        for ms in by_line.values():
            for k, m in enumerate(ms):
                self.rounds[k][m.path].append(m)
        self.order = sorted(self.rounds)
        self.lock = threading.Lock()

    def take(self, last_path):
        with self.lock:
            while self.order:
                files = self.rounds[self.order[0]]
                if not files:
                    self.order.pop(0)
                    continue
                path = last_path if last_path in files else max(files, key=lambda p: len(files[p]))
                m = files[path].popleft()
                if not files[path]:
                    del files[path]
                return m
            return None


def main(argv):
    args = parse_args(argv)
    root = os.path.abspath(args.root)
    cfg = config.Config(root)
    t0 = time.monotonic()
    if args.argue:
        return argue(cfg, args.out or os.path.join(root, "build", "mutants"), *args.argue)
    if not (args.since or args.files or args.all):
        base = os.path.join(root, "mutants", "base")
        if not os.path.exists(base):
            raise SystemExit("mutants: name the scope: --since REV, --files PATH..., or --all")
        with open(base) as f:
            args.since = f.read().split()[0]
        say("mutants: the lines changed since %s (mutants/base)" % args.since)
    mutants, files, changed = select(args, cfg, root)
    if args.mutant:
        known = set(m.id for m in mutants)
        for i in args.mutant:
            if i not in known:
                raise SystemExit("mutants: --mutant %s: no mutant of that id in the scope taken" % i)
        mutants = [m for m in mutants if m.id in args.mutant]
    if args.resume:
        carry(args.resume, mutants)
    arguments = report.read_equivalent(cfg.equivalent)
    out = os.path.abspath(args.out) if args.out else os.path.join(root, "build", "mutants")
    os.makedirs(out, exist_ok=True)
    jobs = args.jobs or os.cpu_count() or 1
    if args.list:
        for m in mutants:
            say("%s %s:%d: %s [%s] %s  =>  %s" % (m.id, m.path, m.line, m.function, m.op, m.before, m.after))
        say("mutants: %d in %d files" % (len(mutants), len(set(m.path for m in mutants))))
        return 0
    say("mutants: %d mutants in %d files%s" % (
        len(mutants), len(set(m.path for m in mutants)),
        " (the lines changed since %s)" % args.since if args.since else ""))

    stop = threading.Event()
    workers = []

    def interrupted(signum, frame):
        raise KeyboardInterrupt

    # Set, not inherited: a shell starts a background job with SIGINT
    # ignored, and an interrupt must still put every copy back.
    signal.signal(signal.SIGINT, interrupted)
    signal.signal(signal.SIGTERM, interrupted)
    threads = []
    try:
        result = run(args, cfg, root, out, mutants, files, arguments, jobs, t0, stop, workers, threads)
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        stop.set()
        coverage.RUNNING.kill_all()
        for w in workers:
            w.running.kill_all()
        for t in threads:
            t.join()
        for w in workers:
            w.restore()
        say("mutants: interrupted; the project's files were never written, and each worker's copy is "
            "put back as it was")
        return 130
    return result


def run(args, cfg, root, out, mutants, files, arguments, jobs, t0, stop, workers, threads):
    snapshot = tree_files(root)
    cfg.use_bats = cfg.takes_bats(set(m.path for m in mutants))
    if not cfg.use_bats:
        say("mutants: no mutant is in a file the bats tests run (mutants/config.ini, bats_for): "
            "they are left out")
    hosts = host_lines(cfg, root, files)
    per_build = max(1, (os.cpu_count() or 1) // jobs)
    if not mutants:
        cov = None
    else:
        w0 = Worker(0, cfg, out, per_build, None, say)
        workers.append(w0)
        say("mutants: preparing worker 0 (%s)" % w0.home)
        w0.prepare(root, snapshot)
        if args.tests:
            cov = coverage.Chosen(args.tests_re, w0.trees[0].specs)
            say("mutants: judged by the %d tests whose names match %s, without a coverage pass"
                % (len(cov.names), args.tests))
        else:
            cov = coverage.run_pass(cfg, w0.src, out, snapshot, jobs, say)
        w0.cov = cov
    todo = []
    for m in mutants:
        arg = report.argument_for(arguments, m)
        if arg:
            arg.used = m
        if m.extra.get("carried"):
            continue
        if m.lang == "c" and not cov.is_built(m.path, m.first_line or m.line, m.last_line):
            m.verdict, m.test = NOT_BUILT, "no line of it is compiled in this build"
            continue
        m.extra["tests"] = tests_for(m, cov, hosts)
        if not m.extra["tests"]:
            m.verdict, m.test = UNCOVERED, "no test executes line %d" % m.line
            continue
        todo.append(m)
    say("mutants: %d to try, %d on lines no test executes, %d not built here" % (
        len(todo), sum(m.verdict == UNCOVERED for m in mutants), sum(m.verdict == NOT_BUILT for m in mutants)))
    schedule = Schedule(todo)
    lock = threading.Lock()
    done = [0]
    start = time.monotonic()
    # From the first mutant: a coverage pass that took long (a cold tree,
    # a loaded machine) must not leave the budget with nothing to try.
    deadline = start + args.budget if args.budget else None
    last_report = [start]

    # Set by each worker's thread as it ends: a join that an interrupt cut
    # short may leave a thread that still runs reported as ended
    # (CPython's Thread.join and KeyboardInterrupt), an Event may not.
    ended = {}

    def work(w):
        try:
            work_on(w)
        finally:
            ended[w.n].set()

    def work_on(w):
        last = None
        while not stop.is_set():
            if deadline and time.monotonic() > deadline:
                return
            m = schedule.take(last)
            if m is None:
                return
            last = m.path
            w.try_mutant(m, m.extra["tests"], stop)
            if stop.is_set():
                # In flight at the interrupt: whatever its tests said
                # while they were being ended judges nothing.
                m.verdict, m.test = "", ""
                return
            if m.verdict in (KILLED, TIMEOUT) and report.argument_for(arguments, m):
                w.confirm(m, out, stop)
            with lock:
                done[0] += 1
                if m.verdict == SURVIVED and not report.argument_for(arguments, m):
                    say("survived: %s:%d %s [%s] %s  =>  %s" % (m.path, m.line, m.function, m.op, m.before, m.after))
                now = time.monotonic()
                if now - last_report[0] > 60:
                    last_report[0] = now
                    say("mutants: %d of %d tried, %.1f a minute" % (done[0], len(todo), 60 * done[0] / (now - start)))

    interrupted = False
    if todo:
        for n in range(1, min(jobs, len(todo))):
            w = Worker(n, cfg, out, per_build, cov, say)
            workers.append(w)
            say("mutants: preparing worker %d (%s)" % (n, w.home))
            w.prepare(root, snapshot)
        start = time.monotonic()
        for w in workers:
            ended[w.n] = threading.Event()
        threads.extend(threading.Thread(target=work, args=(w,), daemon=True) for w in workers)
        for t in threads:
            t.start()
        try:
            for t in threads:
                while t.is_alive():
                    t.join(0.5)
        except KeyboardInterrupt:
            # An interrupt ends the run as the budget would: the mutants in
            # flight are stopped and put back, and what was tried is
            # reported.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            stop.set()
            for w in workers:
                w.running.kill_all()
            for e in ended.values():
                e.wait()
            for w in workers:
                w.restore()
            interrupted = True
    elapsed = time.monotonic() - start
    for m in todo:
        if not m.verdict:
            m.verdict, m.test = NOT_RUN, ("the run was interrupted first" if interrupted else
                                          "the budget (%g s) ran out first" % args.budget)
    result = finish(args, cfg, out, mutants, arguments, done[0], elapsed, changed_scope=bool(args.since),
                    interrupted=interrupted)
    if interrupted:
        say("mutants: interrupted; the project's files were never written, each worker's copy is put back "
            "as it was, and what was tried is reported above")
        return 130
    return result


# The verdicts --resume carries over: a kill stays a kill while the text of
# the mutant (its id) is the same, as long as no test was taken away; a
# survivor is tried again, since a test may have come.
CARRIED = (KILLED, TIMEOUT, INVALID)


def carry(path, mutants):
    """Sets the verdict of each mutant that the run whose table is path
    killed (or could not compile), and says how many."""
    try:
        with open(path, encoding="utf-8") as f:
            rows = [l.rstrip("\n").split("\t") for l in f]
    except OSError as e:
        raise SystemExit("mutants: --resume %s: %s" % (path, e.strerror))
    if not rows or tuple(rows[0]) != report.TSV_COLUMNS:
        raise SystemExit("mutants: --resume %s: not a mutants.tsv of this engine (its first line is not %s)"
                         % (path, " ".join(report.TSV_COLUMNS)))
    before = {}
    for r in rows[1:]:
        row = dict(zip(rows[0], r))
        if row.get("verdict") in CARRIED:
            before[row["id"]] = row
    n = 0
    for m in mutants:
        row = before.get(m.id)
        if row:
            m.verdict = row["verdict"]
            test = row["test"]
            m.test = test if test.endswith("(carried over)") else test + " (carried over)"
            m.extra["carried"] = True
            n += 1
    say("mutants: %d verdicts carried over from %s (killed there, or not compiled); the other %d are tried"
        % (n, path, len(mutants) - n))


def argue(cfg, out, mutant_id, why):
    """Appends the equivalent.tsv row of a mutant of the last run."""
    path = os.path.join(out, "mutants.tsv")
    if not os.path.exists(path):
        raise SystemExit("mutants: --argue: no %s; run the engine first" % path)
    with open(path, encoding="utf-8") as f:
        rows = [l.rstrip("\n").split("\t") for l in f]
    head = rows[0]
    for r in rows[1:]:
        row = dict(zip(head, r))
        if row["id"] == mutant_id:
            if row["verdict"] not in ("survived", "uncovered", "equivalent"):
                raise SystemExit("mutants: --argue %s: the last run says %s (%s); only a survivor or an "
                                 "uncovered line is argued" % (mutant_id, row["verdict"], row["test"]))
            with open(cfg.equivalent, "a", encoding="utf-8") as f:
                f.write("\t".join([row["file"], row["function"], row["operator"], row["before"], row["after"],
                                   row["n"], why.replace("\t", " ")]) + "\n")
            say("mutants: %s:%s [%s] argued in mutants/equivalent.tsv" % (row["file"], row["line"], row["operator"]))
            return 0
    raise SystemExit("mutants: --argue %s: no such mutant in %s" % (mutant_id, path))


def finish(args, cfg, out, mutants, arguments, tried, elapsed, changed_scope, interrupted=False):
    wrong, stale, flaky = [], [], []
    for m in mutants:
        arg = report.argument_for(arguments, m)
        if not arg:
            continue
        if m.verdict in (SURVIVED, UNCOVERED):
            m.verdict, m.why = EQUIVALENT, arg.why
        elif m.verdict in (KILLED, TIMEOUT) and m.extra.get("flaky"):
            # The argument stands: its kill did not repeat.
            flaky.append((arg, m, m.test))
            m.verdict, m.why = EQUIVALENT, arg.why
        elif m.verdict in (KILLED, TIMEOUT):
            wrong.append((arg, m))
    if not changed_scope and not args.mutant:
        paths = set(m.path for m in mutants)
        stale = [a for a in arguments.values() if a.used is None and a.key[0] in paths]
    rows, total = report.table(mutants)
    report.write_tsv(os.path.join(out, "mutants.tsv"), mutants)
    notes = []
    say("")
    for r in rows:
        say(r)
    say("")
    open_ones = [m for m in mutants if m.verdict in (SURVIVED, UNCOVERED)]
    for m in sorted(open_ones, key=lambda m: (m.path, m.line)):
        say("%s: %s:%d %s [%s]\n    %s\n => %s" % (m.verdict, m.path, m.line, m.function, m.op, m.before, m.after))
    for arg, m in wrong:
        notes.append("mutants/equivalent.tsv:%d argues a mutant equivalent that %s kills: %s:%d [%s] %s"
                     % (arg.lineno, m.test, m.path, m.line, m.op, m.before))
    for arg, m, test in flaky:
        passes, kept = m.extra["flaky"]
        notes.append("mutants/equivalent.tsv:%d argues a mutant equivalent that %s failed on once, then passed "
                     "%d of %d times again: %s fails now and then, and the argument stands (%s:%d [%s] %s)%s"
                     % (arg.lineno, test, passes, Worker.AGAIN, test.split(" (")[0], m.path, m.line, m.op, m.before,
                        "; the failing run's output: " + kept if kept else ""))
    for arg in stale:
        notes.append("mutants/equivalent.tsv:%d names no mutant of the code as it is (%s, %s, %s): "
                     "remove it or write it anew" % (arg.lineno, arg.key[0], arg.key[1], arg.key[3]))
    for n in notes:
        say(n)
    report.write_md(os.path.join(out, "mutants.md"), rows, mutants, notes)
    if total[INVALID]:
        say("mutants: %d did not compile and are not counted (mutants.tsv says why)" % total[INVALID])
    if total[NOT_BUILT]:
        say("mutants: %d are on lines this build does not compile (another OS, or an #if left out)" % total[NOT_BUILT])
    if total[NOT_RUN]:
        say("mutants: %d were not tried %s" % (total[NOT_RUN], "before the interrupt" if interrupted else
                                                "within the budget of %g s" % args.budget))
    if total[TIMEOUT]:
        say("mutants: %d of the killed were caught by a test's time guard (a hang)" % total[TIMEOUT])
    if tried:
        ran = [m for m in mutants if m.seconds]
        beyond = sum(m.seconds - m.test_seconds for m in ran) / max(1, len(ran))
        say("mutants: %d tried in %.0f s, %.1f a minute; each took %.1f s beyond the %.1f tests it ran "
            "(its build, the file written and put back)"
            % (tried, elapsed, 60 * tried / elapsed, beyond, sum(m.tests_run for m in ran) / max(1, len(ran))))
    say("mutants: %s has a row per mutant, mutants.md beside it the table" % os.path.join(out, "mutants.tsv"))
    say(report.last_line(total))
    return 1 if open_ones or wrong or stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
