#!/bin/bash -eu
# build.sh -- ClusterFuzzLite's build of the fuzz target, with its compilers and flags.
#
# ClusterFuzzLite (OSS-Fuzz's toolchain) chooses the sanitizer and the
# coverage instrumentation through $CC, $CFLAGS and $LIB_FUZZING_ENGINE; the
# runtime's objects must carry the same flags as the harness, so both are
# built by fuzz/CMakeLists.txt (standalone, the runtime as a subproject)
# with those flags, and linked with $CXX as OSS-Fuzz's libFuzzer needs.
#
# ClusterFuzzLite runs each binary in $OUT as it is, with no environment of
# ours, and gb_init runs once per process, so the runtime configuration is
# in the binary's name (see fuzz/configs.txt and name_has() in
# fuzz/config.c): one build, copied under one name per configuration,
# each with the committed corpus as its seed corpus, the dictionary and its
# options.
set -o pipefail

build="$WORK/giveback-fuzz"
cmake -S fuzz -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=None \
    -DCMAKE_C_COMPILER="$CC" -DCMAKE_CXX_COMPILER="$CXX" \
    -DCMAKE_C_FLAGS="$CFLAGS" -DCMAKE_CXX_FLAGS="$CXXFLAGS" \
    -DGB_BUILD_POISONS=OFF \
    -DGB_FUZZ_ENGINE=libfuzzer -DGB_FUZZ_LINK_FLAGS="$LIB_FUZZING_ENGINE" -DGB_FUZZ_LINK_CXX=ON
cmake --build "$build" --target fuzz_runtime

(cd fuzz/corpus && zip -q -r "$WORK/seed_corpus.zip" .)
for name in map heap_stress3 map_copy_malloc_nocache defaults; do
    target="fuzz_runtime_$name"
    cp "$build/fuzz_runtime" "$OUT/$target"
    cp "$WORK/seed_corpus.zip" "$OUT/${target}_seed_corpus.zip"
    cp fuzz/fuzz_runtime.dict "$OUT/$target.dict"
    cp fuzz/fuzz_runtime.options "$OUT/$target.options"
done
