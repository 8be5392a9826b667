#!/usr/bin/env bats
# links.bats -- gbgate finds its folder through links, and says its version.
#
# An install puts a link to gbgate in <prefix>/bin, and users link that
# again onto their PATH: gbgate must follow every link back to the folder
# that holds gbgate.bash, relative links read from the folder of the link
# that holds them. A copy of the folder runs as the folder does; a copy of
# the script alone stops with a message. --version prints the version of
# giveback's project() line, here in the source tree, and a copy outside
# it says it has none. The installed kit is checked by ctest's
# install.gbgate (tests/install/check_gbgate.sh). By hand: bats
# gates/kit/test/links.bats.
bats_require_minimum_version 1.8.0

setup_file() {
    local dir kit
    dir="$(cd "$(dirname "${BATS_TEST_FILENAME}")" && pwd)"
    kit="$(dirname "${dir}")"
    "${CC:-cc}" -std=c99 -O1 -Wall -Wextra -Werror -I"${kit}" -o "${BATS_FILE_TMPDIR}/prog" "${dir}/prog.c"
}

setup() {
    KIT="$(cd "$(dirname "${BATS_TEST_FILENAME}")/.." && pwd)"
    PROG="${BATS_FILE_TMPDIR}/prog"
    WORK="$(cd -P "${BATS_TEST_TMPDIR}" && pwd)"
    # The version as giveback's CMakeLists.txt writes it.
    VERSION="$(sed -n 's/^project(giveback VERSION \([0-9.]*\).*/\1/p' "${KIT}/../../CMakeLists.txt")"
}

@test "the source tree's gbgate prints the project's version" {
    [ -n "${VERSION}" ]
    run "${KIT}/gbgate" --version
    [ "$status" -eq 0 ]
    [ "$output" = "gbgate ${VERSION}" ]
}

@test "gbgate runs through a link on PATH and through a relative link to that link" {
    mkdir -p "${WORK}/bin" "${WORK}/more"
    ln -s "${KIT}/gbgate" "${WORK}/bin/gbgate"
    ln -s ../bin/gbgate "${WORK}/more/gb"
    PATH="${WORK}/bin:${PATH}" run gbgate --version
    [ "$status" -eq 0 ]
    [ "$output" = "gbgate ${VERSION}" ]
    run "${WORK}/more/gb" --version
    [ "$status" -eq 0 ]
    [ "$output" = "gbgate ${VERSION}" ]
    # The runner itself (its support files, and its own path for the
    # matrix) through the links.
    run "${WORK}/more/gb" run --cap 32MiB -- "${PROG}" frees 16 1
    [ "$status" -eq 0 ]
    [ "${lines[${#lines[@]} - 1]}" = "gate: pass" ]
    run "${WORK}/more/gb" run --cap 8MiB -- "${PROG}" keeps 16 1
    [ "$status" -eq 1 ]
    [[ "${lines[${#lines[@]} - 1]}" == "gate: fail (rss): "* ]] || false
}

@test "gbgate runs through a chain of as many links as the kernel follows" {
    # l1 -> l2 -> ... -> gbgate, relative links but the last: 40 links on
    # Linux (MAXSYMLINKS), 32 on macOS.
    local i n=40 dir="${WORK}/chain"
    [[ "$(uname -s)" != Darwin ]] || n=32
    mkdir -p "${dir}"
    ln -s "${KIT}/gbgate" "${dir}/l${n}"
    for ((i = n - 1; i >= 1; i--)); do
        ln -s "l$((i + 1))" "${dir}/l${i}"
    done
    run "${dir}/l1" --version
    [ "$status" -eq 0 ]
    [ "$output" = "gbgate ${VERSION}" ]
}

@test "a link in the kit's own folder, relative, is followed too" {
    # A link beside the folder: the relative target is read from the
    # link's folder, not from where gbgate is run.
    mkdir -p "${WORK}/tree/kit" "${WORK}/tree/bin" "${WORK}/elsewhere"
    cp -R "${KIT}/." "${WORK}/tree/kit/"
    ln -s ../kit/gbgate "${WORK}/tree/bin/gbgate"
    cd "${WORK}/elsewhere"
    run "${WORK}/tree/bin/gbgate" run --cap 32MiB -- "${PROG}" frees 16 1
    [ "$status" -eq 0 ]
    [ "${lines[${#lines[@]} - 1]}" = "gate: pass" ]
}

@test "a copy of the folder runs and says it has no version; the script alone stops" {
    mkdir -p "${WORK}/copy" "${WORK}/alone"
    cp -R "${KIT}" "${WORK}/copy/kit"
    run "${WORK}/copy/kit/gbgate" run --cap 32MiB -- "${PROG}" frees 16 1
    [ "$status" -eq 0 ]
    [ "${lines[${#lines[@]} - 1]}" = "gate: pass" ]
    run "${WORK}/copy/kit/gbgate" --version
    [ "$status" -eq 1 ]
    [[ "$output" == *"gbgate: no version: this kit (${WORK}/copy/kit) is neither installed"* ]] || false
    cp "${KIT}/gbgate" "${WORK}/alone/gbgate"
    run "${WORK}/alone/gbgate" --version
    [ "$status" -eq 2 ]
    [[ "$output" == "gbgate: the kit's files are not beside ${WORK}/alone/gbgate (gbgate.bash is missing)"* ]] || false
}
