# checkpoint.tcl -- the kit's protocol from Tcl: exec runs the helper
# (gbgate checkpoint, on PATH) and waits for it; >@stdout gives it this
# process's stdout, where it prints the line, and it stops this process (its
# parent) and returns once it is stopped. Gate it:
#   gbgate run --cap 24MiB --at freed -- tclsh checkpoint.tcl
proc checkpoint {name args} {
    flush stdout ;# what this program printed goes out before the line
    exec gbgate checkpoint $name {*}$args >@stdout 2>@stderr
}

set data [string repeat x [expr {64 << 20}]] ;# 64 MiB, every page written
checkpoint held bytes=[string length $data]
unset data ;# the string's memory goes back to malloc when it is freed
checkpoint freed
