"""checkpoint.py -- the kit's protocol from Python: the helper (gbgate
checkpoint, on PATH) prints the line on this process's stdout, stops it and
returns once it is stopped; subprocess.run waits for it, so nothing runs
past the line. Gate it: gbgate run --cap 24MiB --at freed -- python3 checkpoint.py
"""
import subprocess
import sys


def checkpoint(name, **figures):
    # What this program printed goes out before the line, in order.
    sys.stdout.flush()
    words = [f"{k}={v}" for k, v in figures.items()]
    subprocess.run(["gbgate", "checkpoint", name, *words], check=True)


data = b"x" * (64 << 20)  # 64 MiB, every page written
checkpoint("held", bytes=len(data))
del data
checkpoint("freed")
