# Makefile -- the two commands of the README, and the pieces they are made of.
#
#   make test   installs what the tests need, then builds and runs every test
#               from nothing (ci/test.sh: release, ASan+UBSan, TSan, arm64
#               under qemu-user, the macOS cross build).
#   make check  the release build's tests only: the quick loop.
.PHONY: test check deps clean

test: deps
	ci/test.sh

check:
	cmake --preset release
	cmake --build --preset release
	ctest --preset release

deps:
	ci/install-deps.sh base cross-arm64 cross-macos

clean:
	rm -rf build
