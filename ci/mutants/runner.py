"""runner.py -- the tests a mutant is judged by, and one run of one of
them under a guard.

Two kinds of test: ctest's (listed by ctest --show-only=json-v1, run here
directly with the properties ctest would honour, so that their order is
ours and the first failure ends the mutant's run) and bats' (one @test of
a .bats file, run alone with --filter).

The guard: a test that runs past its time limit is a timeout, and one
whose resident size passes its limit is killed as a runaway; both end the
whole process group the test started. The limits are far above what the
test took without a mutant, so a slow machine does not trip them, and a
tripped one counts the mutant as caught, never the run as failed.
"""
import json
import threading
import os
import re
import signal
import subprocess
import time

PASS, FAIL, SKIP, TIMEOUT, MEMORY = "pass", "fail", "skip", "timeout", "memory"


class Spec:
    """One test: how to run it and how to read its result."""

    def __init__(self, name, kind, command, cwd, env=None, skip_rc=None, will_fail=False,
                 skip_re=(), pass_re=(), fail_re=(), locks=()):
        self.name, self.kind, self.command, self.cwd = name, kind, command, cwd
        self.env = env or {}
        self.locks = tuple(sorted(set(locks)))
        self.skip_rc, self.will_fail = skip_rc, will_fail
        self.skip_re, self.pass_re, self.fail_re = skip_re, pass_re, fail_re


def ctest_specs(build_dir):
    out = subprocess.run(["ctest", "--test-dir", build_dir, "--show-only=json-v1"],
                         capture_output=True, text=True, check=True).stdout
    specs = []
    for t in json.loads(out)["tests"]:
        if "command" not in t:
            continue  # a test whose program is not built in this tree
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        if props.get("DISABLED"):
            continue
        env = {}
        for kv in props.get("ENVIRONMENT", []):
            k, _, v = kv.partition("=")
            env[k] = v
        specs.append(Spec(
            t["name"], "ctest", t["command"], props.get("WORKING_DIRECTORY", build_dir), env,
            props.get("SKIP_RETURN_CODE"), bool(props.get("WILL_FAIL")),
            props.get("SKIP_REGULAR_EXPRESSION", []), props.get("PASS_REGULAR_EXPRESSION", []),
            props.get("FAIL_REGULAR_EXPRESSION", []),
            # ctest's RESOURCE_LOCK, which the tests that install into
            # one tree rely on, and RUN_SERIAL, a lock every test takes.
            list(props.get("RESOURCE_LOCK", [])) + (["*serial*"] if props.get("RUN_SERIAL") else [])))
    return specs


# The locks of ctest's RESOURCE_LOCK, one a name, taken in the order of
# their names (so that two tests never wait on each other) by every run
# of this process: the coverage pass and the workers run tests at once.
_LOCKS = {}
_LOCKS_GUARD = threading.Lock()


def _locks_of(spec):
    with _LOCKS_GUARD:
        return [_LOCKS.setdefault(name, threading.Lock()) for name in spec.locks]


_BATS_TEST = re.compile(r"""^\s*@test\s+(?:"((?:[^"\\]|\\.)*)"|'([^']*)')\s*\{""")


def bats_names(path):
    names = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = _BATS_TEST.match(line)
            if m:
                name = m.group(1) if m.group(1) is not None else m.group(2)
                names.append(re.sub(r"\\(.)", r"\1", name))
    return names


def ere_exact(name):
    """An extended regular expression (bash's =~, which bats' --filter
    uses) that matches name and nothing else."""
    return "^" + re.sub(r"([][\\.^$|?*+(){}])", r"\\\1", name) + "$"


def is_bats(name):
    """Whether a test's name is a bats test's (its file, then its own)."""
    return ".bats:" in name


def bats_specs(root, files):
    specs = []
    for rel in files:
        for name in bats_names(os.path.join(root, rel)):
            specs.append(Spec("%s:%s" % (rel, name), "bats", ["bats", "--tap", "-f", ere_exact(name), rel], root))
    return specs


def bats_batch(root, rel, specs):
    """One bats run of several tests of the file rel: they pass when its
    plan is theirs and none is "not ok"."""
    names = [s.name.split(":", 1)[1] for s in specs]
    pattern = "^(" + "|".join(ere_exact(n)[1:-1] for n in names) + ")$"
    spec = Spec("%s:%d tests" % (rel, len(names)), "bats-batch", ["bats", "--tap", "-f", pattern, rel], root)
    spec.names = names
    return spec


def first_failed(spec, text):
    """The first test of a batch that failed, by bats' TAP line."""
    if spec.kind != "bats-batch":
        return None
    for line in text.splitlines():
        m = re.match(r"not ok \d+ (.*)$", line)
        if m:
            return "%s:%s" % (spec.command[-1], m.group(1))
    return None


def _rss_kib(pid):
    try:
        with open("/proc/%d/statm" % pid) as f:
            return int(f.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)
    except (OSError, ValueError, IndexError):
        return 0


class Result:
    def __init__(self, status, seconds, rss_kib, text):
        self.status, self.seconds, self.rss_kib, self.text = status, seconds, rss_kib, text
        self.tail = text[-2000:]


class Running:
    """The process groups of the tests in flight, so that an interrupt can
    end them all."""

    def __init__(self):
        self.pgids = set()

    def kill_all(self):
        for pg in list(self.pgids):
            try:
                os.killpg(pg, signal.SIGKILL)
            except ProcessLookupError:
                pass


def command(cmd, log_path, running):
    """Runs cmd (a build) to its end, its output in log_path, in a process
    group that running can end; True on success."""
    with open(log_path, "w") as out:
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             start_new_session=True)
        running.pgids.add(p.pid)
        try:
            return p.wait() == 0
        finally:
            running.pgids.discard(p.pid)


def run(spec, env_extra, timeout, rss_limit_kib, running, log_path=None):
    locks = _locks_of(spec)
    for lock in locks:
        lock.acquire()
    try:
        return _run(spec, env_extra, timeout, rss_limit_kib, running, log_path)
    finally:
        for lock in reversed(locks):
            lock.release()


def _run(spec, env_extra, timeout, rss_limit_kib, running, log_path=None):
    env = dict(os.environ)
    env.update(spec.env)
    env.update(env_extra)
    out = open(log_path, "w+b") if log_path else subprocess.DEVNULL
    t0 = time.monotonic()
    p = subprocess.Popen(spec.command, cwd=spec.cwd, env=env, stdin=subprocess.DEVNULL,
                         stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    running.pgids.add(p.pid)
    status, peak, wait = None, 0, 0.005
    try:
        while True:
            try:
                rc = p.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                pass
            wait = min(wait * 2, 0.2)
            peak = max(peak, _rss_kib(p.pid))
            if time.monotonic() - t0 > timeout:
                status = TIMEOUT
            elif rss_limit_kib and peak > rss_limit_kib:
                status = MEMORY
            if status:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                rc = None
                break
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)  # whatever the test left behind
        except ProcessLookupError:
            pass
        running.pgids.discard(p.pid)
    seconds = time.monotonic() - t0
    tail = b""
    if log_path:
        out.seek(0)
        tail = out.read()
        out.close()
    text = tail.decode("utf-8", "replace")
    if status is None:
        status = judge(spec, rc, text)
    return Result(status, seconds, peak, text)


def judge(spec, rc, text):
    if spec.kind in ("bats", "bats-batch"):
        # A filter that matched fewer tests than asked would pass without
        # running them.
        want = "1..%d" % (len(spec.names) if spec.kind == "bats-batch" else 1)
        if want not in text.splitlines()[:3]:
            return FAIL
        return PASS if rc == 0 and "\nnot ok " not in "\n" + text else FAIL
    if spec.skip_rc is not None and rc == spec.skip_rc:
        return SKIP
    if any(re.search(r, text) for r in spec.skip_re):
        return SKIP
    if spec.pass_re:
        ok = any(re.search(r, text) for r in spec.pass_re)
    else:
        ok = rc == 0
    if any(re.search(r, text) for r in spec.fail_re):
        ok = False
    if spec.will_fail:
        ok = not ok
    return PASS if ok else FAIL
