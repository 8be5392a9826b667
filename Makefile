# Makefile -- the two commands of the README, and the pieces they are made of.
#
#   make gate   the main job: installs what is missing, builds the runtime
#               clean and once per poison, runs every gate on every build
#               and prints the kill matrix (ci/gate.sh).
#   make test   installs what the tests need, then builds and runs every test
#               from nothing (ci/test.sh: release, ASan+UBSan, TSan, arm64
#               under qemu-user, the macOS cross build).
#   make check  the release build's tests only: the quick loop.
#   make bench  installs what is missing, builds the benchmarks at -O2, runs
#               every one and draws the charts (ci/bench.sh; build/bench/).
.PHONY: gate test check deps bench clean

gate:
	ci/install-deps.sh base gate
	ci/gate.sh

test: deps
	ci/test.sh

check:
	cmake --preset release
	cmake --build --preset release
	ctest --preset release

bench:
	ci/install-deps.sh base gate bench
	ci/bench.sh

deps:
	ci/install-deps.sh base gate lint cross-arm64 cross-macos

clean:
	rm -rf build
