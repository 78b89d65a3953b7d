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
#
# Quiet by default: each stage prints one line ("[2/4] configuring ...") and
# the full output of apt-get, meson and ninja goes to logs/<stage>.log
# (scripts/stage; when a stage fails, the last 30 lines of its log and its
# path). The tests' and the demo's own output still shows. V=1 (or
# VERBOSE=1) shows everything. `make demo` installs only the [demo] section
# of scripts/packages.txt; `make test` (and `make setup`) everything.
.PHONY: all setup build release demo loop loop-scale test test-load bench fuzz container format format-check clean

BUILD ?= build
RELEASE ?= build-release
ASAN ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 30
CONTAINER_BUILD ?= build-container
MESON_TEST = meson test --print-errorlogs --num-processes 2
V ?=
VERBOSE ?=
export V VERBOSE
STAGE = ./scripts/stage

# $(call setup_stages,demo|test,M): stages 1 and 2 of M, the missing Debian
# packages and the meson setup of the build dirs (scripts/setup).
define setup_stages
	@$(STAGE) --step 1/$(2) setup "$$(./scripts/setup $(1) --plan)" ./scripts/setup $(1) --deps-only
	@$(STAGE) --step 2/$(2) configure "configuring $(if $(filter demo,$(1)),build-release/,build/$(comma) build-asan/ and build-release/) (meson setup)" \
	  ./scripts/setup $(1) --configure-only
endef
comma = ,
RELEASE_STAGE = release "building the release build (profile-guided; minutes the first time)" \
  ./scripts/release $(RELEASE)

all: build

setup:
	$(call setup_stages,test,2)

build: setup
	ninja -C $(BUILD)

release:
	$(call setup_stages,demo,3)
	@$(STAGE) --step 3/3 $(RELEASE_STAGE)

demo:
	$(call setup_stages,demo,4)
	@$(STAGE) --step 3/4 $(RELEASE_STAGE)
	@$(STAGE) --step 4/4 --show demo "running the demo: configs/local.yaml, label shards under runs/local/" \
	  ./scripts/demo $(RELEASE)

loop: setup
	@$(STAGE) $(RELEASE_STAGE)
	$(RELEASE)/sf-fleet/sf-fleet loop configs/loop.yaml
	$(RELEASE)/sf-fleet/sf-fleet status runs/loop

loop-scale: setup
	@$(STAGE) $(RELEASE_STAGE)
	$(RELEASE)/sf-fleet/sf-fleet loop configs/loop-scale.yaml
	$(RELEASE)/sf-fleet/sf-fleet status runs/loop-scale

# Both halves run even when the first fails; both summaries are printed;
# the exit status says whether either failed (scripts/test-all).
test:
	$(call setup_stages,test,4)
	@MESON_TEST="$(MESON_TEST)" ./scripts/test-all $(BUILD) $(ASAN)

# The checked suite with every CPU kept busy meanwhile: a pass must not
# depend on the machine's speed (scripts/test-under-load).
test-load: setup
	@$(STAGE) build "building $(BUILD)/ (checked: -O2 -g, assertions on)" ninja -C $(BUILD)
	./scripts/test-under-load $(MESON_TEST) -C $(BUILD)

bench: setup
	@$(STAGE) $(RELEASE_STAGE)
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
