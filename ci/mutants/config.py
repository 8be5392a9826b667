"""config.py -- what the engine mutates, builds and runs, read from the
project's mutants/config.ini, and the arid functions of mutants/arid.tsv.
"""
import configparser
import fnmatch
import glob
import json
import os
import re
import shlex

LANGS = ("c", "sh", "awk")


class Config:
    def __init__(self, root):
        self.root = root
        path = os.path.join(root, "mutants", "config.ini")
        if not os.path.exists(path):
            raise SystemExit("mutants: no %s: the engine does not know what to mutate here" % path)
        cp = configparser.ConfigParser(interpolation=None)
        cp.read(path)
        self.scope = {lang: cp.get("scope", lang, fallback="").split() for lang in LANGS}
        self.exclude = cp.get("scope", "exclude", fallback="").split()
        # Where an install puts a file in scope (THERE:HERE, THERE a folder
        # of the prefix, HERE the folder in the tree): a test that runs the
        # installed copy executes the tree's lines.
        self.installed = [tuple(p.split(":", 1)) for p in cp.get("scope", "installed", fallback="").split()]
        self.cmake = shlex.split(cp.get("build", "cmake", fallback=""))
        self.coverage = shlex.split(cp.get("build", "coverage", fallback=""))
        names = cp.get("build", "presets", fallback="").split()
        self.tiers = [Tier(root, n, self.cmake) for n in names] or [Tier(root, None, self.cmake)]
        self.bats = cp.get("tests", "bats", fallback="").split()
        # The files whose lines the bats tests can execute: for a run that
        # mutates none of them, the coverage pass leaves the bats out.
        self.bats_for = cp.get("tests", "bats_for", fallback="").split()
        self.use_bats = True
        self.skip_tests = cp.get("tests", "skip", fallback="").split()
        self.arid = read_arid(os.path.join(root, "mutants", "arid.tsv"))
        self.equivalent = os.path.join(root, "mutants", "equivalent.tsv")

    def files(self):
        """Every file in scope, {path: lang}, paths relative to the top."""
        out = {}
        excluded = set()
        for pattern in self.exclude:
            excluded.update(glob.glob(pattern, root_dir=self.root, recursive=True))
        for lang in LANGS:
            for pattern in self.scope[lang]:
                for p in sorted(glob.glob(pattern, root_dir=self.root, recursive=True)):
                    if p not in excluded and os.path.isfile(os.path.join(self.root, p)):
                        out.setdefault(p, lang)
        return out

    def takes_bats(self, paths):
        """Whether mutants of paths can be judged by the bats tests."""
        if not self.bats_for:
            return True
        return any(fnmatch.fnmatch(p, g) for p in paths for g in self.bats_for)

    def bats_files(self):
        if not self.use_bats:
            return []
        out = []
        for pattern in self.bats:
            out.extend(sorted(glob.glob(pattern, root_dir=self.root, recursive=True)))
        return out


class Tier:
    """One build a mutant is tried in: a configure preset of the project's
    CMakePresets.json (its cache variables, and the test filter of the
    test preset of the same name), plus the engine's own cache entries.
    The first tier is where every mutant is tried and whose coverage is
    read; one that survives it is tried again in each next tier (the
    sanitizers' builds, where a mutant may show as a memory error or a
    race), with the tests of that tier that execute its line."""

    def __init__(self, root, preset, extra):
        self.name = preset or "default"
        self.cmake = []
        self.tests = None  # a regular expression of the names it runs, or None: all
        if preset:
            path = os.path.join(root, "CMakePresets.json")
            with open(path) as f:
                presets = json.load(f)
            conf = [p for p in presets.get("configurePresets", []) if p["name"] == preset]
            if not conf:
                raise SystemExit("mutants: mutants/config.ini names the preset %s, which %s has not" % (preset, path))
            for k, v in sorted(conf[0].get("cacheVariables", {}).items()):
                self.cmake.append("-D%s=%s" % (k, v["value"] if isinstance(v, dict) else v))
            for t in presets.get("testPresets", []):
                if t["name"] == preset:
                    self.tests = t.get("filter", {}).get("include", {}).get("name")
        self.cmake += extra
        self.regex = re.compile(self.tests) if self.tests else None

    def runs(self, test_name):
        return self.regex is None or bool(self.regex.search(test_name))


def read_arid(path):
    arid = {"assert": set(), "log": set(), "commute": set()}
    if not os.path.exists(path):
        return arid
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#") or line.startswith("function\t"):
                continue
            fields = line.split("\t")
            if len(fields) != 3 or fields[1] not in arid:
                raise SystemExit("%s:%d: not a row of function, class (%s) and why: %r"
                                 % (path, n, ", ".join(sorted(arid)), line))
            arid[fields[1]].add(fields[0])
    return arid
