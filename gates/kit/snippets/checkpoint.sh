#!/usr/bin/env bash
# checkpoint.sh -- the kit's protocol from a shell script: the helper
# (gbgate checkpoint, on PATH) prints the line, stops this shell and
# returns once it is stopped. A shell is one thread and could stop itself
# (print, then kill -STOP $$); the helper is the same call in every
# language. Bash, not sh: dash keeps the memory of a string it has let go
# (measured: 17.7 MiB resident after freeing 8 MiB), so this gate would be
# red on it. Gate it:
#   gbgate run --cap 8MiB --at freed -- bash checkpoint.sh
set -e
printf -v x '%*s' 16777216 '' # 16 MiB in one string, every byte written
gbgate checkpoint held bytes=${#x}
x=
gbgate checkpoint freed
