"""generate.py -- the mutants of the files in scope, or of the lines a
change touched.
"""
import os
import re
import subprocess

import c_ops
from mutant import line_of, number_occurrences


def all_mutants(root, files, arid):
    """Every mutant of files ({path: lang}); the files that cannot be read
    as their language are named in the second value."""
    texts = {}
    for path in files:
        with open(os.path.join(root, path), encoding="utf-8") as f:
            texts[path] = f.read()
    enums = c_ops.enum_types(t for p, t in texts.items() if files[p] == "c")
    mutants, errors = [], []
    for path, lang in sorted(files.items()):
        try:
            if lang == "c":
                ms = c_ops.mutants_of(path, texts[path], arid, enums)
            else:
                import sh_ops
                ms = sh_ops.mutants_of(path, texts[path], lang)
        except SyntaxError as e:
            errors.append("%s: %s" % (path, e))
            continue
        mutants.extend(ms)
    return number_occurrences(mutants), texts, errors


def changed_lines(root, since, paths):
    """{path: set of line numbers} of the lines that differ from revision
    since in the working tree (committed or not), and every line of the
    files in paths that git does not track."""
    try:
        subprocess.run(["git", "rev-parse", "--verify", "--quiet", since + "^{commit}"],
                       cwd=root, check=True, capture_output=True)
    except subprocess.CalledProcessError:
        raise SystemExit("mutants: --since %s: not a revision of this repository" % since)
    out = subprocess.run(["git", "diff", "-U0", "--no-color", "--no-ext-diff", since, "--"] + sorted(paths),
                         cwd=root, check=True, capture_output=True, text=True).stdout
    changed, path = {}, None
    for line in out.splitlines():
        if line.startswith("+++ "):
            path = line[6:] if line.startswith("+++ b/") else None
        elif line.startswith("@@") and path:
            m = re.match(r"@@ -\S+ \+(\d+)(?:,(\d+))? @@", line)
            start, count = int(m.group(1)), int(m.group(2) or 1)
            changed.setdefault(path, set()).update(range(start, start + count))
    untracked = subprocess.run(["git", "ls-files", "--others", "--exclude-standard", "--"] + sorted(paths),
                               cwd=root, check=True, capture_output=True, text=True).stdout.split()
    for path in untracked:
        with open(os.path.join(root, path), encoding="utf-8") as f:
            n = f.read().count("\n") + 1
        changed[path] = set(range(1, n + 1))
    return changed


def touches(m, lines, line_starts):
    """Whether mutant m edits one of lines."""
    for start, end, _ in m.edits:
        a = line_of(line_starts, start)
        b = line_of(line_starts, max(end - 1, start))
        if any(n in lines for n in range(a, b + 1)):
            return True
    return False
