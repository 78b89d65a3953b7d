# spirefleet — a thin wrapper over scripts/setup, meson and ninja.
#   make demo          the main job: a local fleet run that writes label shards
#                      (the release build, build-release/)
#   make test          install, build, every test suite, then the unit tests
#                      again under ASan/UBSan (the checked builds build/ and
#                      build-asan/: -O2 -g, assertions on); both halves run
#                      and print their summaries even if the first fails
#   make test-load     the checked suite while every CPU is kept busy
#   make loop          the training loop on one machine (configs/loop.yaml):
#                      self-play, train, gate, promote; writes the learning
#                      curve and the gate reports under runs/loop
#   make loop-scale    the loop at the size where the value head learns
#                      (configs/loop-scale.yaml: ~54,000 labels a generation,
#                      3 generations, mixed leaves; about 90 minutes on 2 cores)
#   make release       the release build alone (build-release/: -O3, LTO, no
#                      assertions, profile-guided: scripts/release builds it
#                      instrumented, trains it and builds it again whenever
#                      the sources changed; `meson configure build-release
#                      -Dmarch=native` for this CPU only)
#   make bench         every benchmark (JSON lines + human lines), on the
#                      release build, then release against checked
#   make fuzz          bounded libFuzzer runs (FUZZ_SECONDS each, default 30)
#   make container     the container image (podman, no registry), then
#                      sf-fleet run inside it (deploy/README.md)
#   make format        clang-format the tree in place
#   make format-check  fail if anything is not clang-formatted
.PHONY: all setup build release demo loop loop-scale test test-load bench fuzz container format format-check clean

BUILD ?= build
RELEASE ?= build-release
ASAN ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 30
CONTAINER_BUILD ?= build-container
MESON_TEST = meson test --print-errorlogs --num-processes 2

all: build

setup:
	./scripts/setup

build: setup
	ninja -C $(BUILD)

release: setup
	./scripts/release $(RELEASE)

demo: release
	./scripts/demo $(RELEASE)

loop: release
	$(RELEASE)/sf-fleet/sf-fleet loop configs/loop.yaml
	$(RELEASE)/sf-fleet/sf-fleet status runs/loop

loop-scale: release
	$(RELEASE)/sf-fleet/sf-fleet loop configs/loop-scale.yaml
	$(RELEASE)/sf-fleet/sf-fleet status runs/loop-scale

# Both halves run even when the first fails; both summaries are printed;
# the exit status says whether either failed (scripts/test-all).
test: setup
	MESON_TEST="$(MESON_TEST)" ./scripts/test-all $(BUILD) $(ASAN)

# The checked suite with every CPU kept busy meanwhile: a pass must not
# depend on the machine's speed (scripts/test-under-load).
test-load: setup
	ninja -C $(BUILD)
	./scripts/test-under-load $(MESON_TEST) -C $(BUILD)

bench: release
	./scripts/bench $(RELEASE)
	ninja -C $(BUILD) tests/bench/bench-engine
	./tests/bench/bench_release.sh $(BUILD) $(RELEASE)

fuzz: setup
	./scripts/fuzz $(FUZZ_BUILD) $(FUZZ_SECONDS)

container: setup
	./tests/integration/test_container.sh . $(CONTAINER_BUILD)

FORMAT_FILES = $(shell git ls-files '*.c' '*.h' '*.cu')

format:
	clang-format -i $(FORMAT_FILES)

format-check:
	clang-format --dry-run --Werror $(FORMAT_FILES)

clean:
	rm -rf $(BUILD) $(ASAN) $(RELEASE) $(FUZZ_BUILD) $(CONTAINER_BUILD)
