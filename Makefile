# Makefile -- the two commands of the README, and the pieces they are made of.
#
#   make gate   the main job: installs what is missing, builds the runtime
#               clean and once per poison, runs every gate on every build
#               and prints the kill matrix, then the kit's matrices of
#               three other allocators, glibc malloc, mimalloc and jemalloc,
#               and of eight language runtimes, Go, CPython, Node.js, Lua,
#               the JVM, PHP, Perl and Tcl
#               (ci/gate.sh; build/gate/, build/gate/foreign/,
#               build/gate/runtimes/).
#   make test   installs what the tests need, then builds and runs every test
#               from nothing (ci/test.sh: release, ASan+UBSan, TSan, the
#               kill matrix, the fuzzers' smoke run, the benchmarks' quick
#               mode, arm64 under qemu-user, the macOS cross build).
#   make check  the release build's tests only: the quick loop.
#   make fuzz   runs libFuzzer and AFL++ for FUZZ_SECONDS (300) each and
#               fails on any crash (ci/fuzz.sh); make fuzz-coverage reports
#               the lines of runtime/src the committed corpus reaches.
#   make mutants  the mutation engine on the lines changed since the
#               revision in mutants/base (ci/mutants.sh; build/mutants/);
#               make mutants-all on every file in scope (mutants/config.ini;
#               build/mutants-all/), carrying over the kills of its last
#               run there, so that a run cut short goes on where it stopped.
#   make bench  installs what is missing, builds the benchmarks at -O2, runs
#               every one, draws the charts and rewrites the README's
#               performance table from the figures (ci/bench.sh --readme;
#               build/bench/).
.PHONY: gate test check deps bench fuzz fuzz-coverage mutants mutants-all clean

gate:
	ci/install-deps.sh base gate runtimes
	ci/gate.sh

test: deps
	ci/test.sh

check:
	cmake --preset release
	cmake --build --preset release
	ctest --preset release

bench:
	ci/install-deps.sh base gate bench
	ci/bench.sh --readme

fuzz:
	ci/install-deps.sh base fuzz
	ci/fuzz.sh

fuzz-coverage:
	ci/install-deps.sh base fuzz
	ci/fuzz-coverage.sh

mutants:
	ci/install-deps.sh base gate runtimes mutants
	ci/mutants.sh --since "$$(cat mutants/base)"

mutants-all:
	ci/install-deps.sh base gate runtimes mutants
	ci/mutants.sh --all --out build/mutants-all \
	  $$(test -f build/mutants-all/mutants.tsv && echo --resume build/mutants-all/mutants.tsv)

deps:
	ci/install-deps.sh base gate runtimes lint cross-arm64 cross-macos fuzz bench mutants

clean:
	rm -rf build
