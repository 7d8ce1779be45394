# jgrfs - the two commands a newcomer runs: `make demo` and `make test`.
#
#   make deps      install what is missing (Debian packages; needs root)
#   make build     configure and build (address+undefined sanitizers) in build/
#   make test      deps + build + every test suite (unit, crash, integration)
#   make valgrind  the unit suite under valgrind, in a build without sanitizers
#   make demo      a 4-disk RAID5 over sparse files in ./demo, mounted at ./demo/mnt
#   make release   an optimised build without sanitizers, with jemalloc, in build-release/
#                  (benchmarks)
#   make bench-scrub  fio through a mount without and with an online scrub at its
#                  default rate (tools/bench/bench_scrub.sh, BENCH_SCRUB_ARGS), in build-release/
#   make bench-slow  declared against the bitmap on members behind nbdkit servers that
#                  delay like a disk, an SSD, a network disk, and on local files
#                  (tools/bench/bench_slow.sh, BENCH_SLOW_ARGS), in build-release/
#   make crash-long  the long in-process crash run (docs/design/recovery.md, "Crash coverage"):
#                  CRASH_ITERS power cuts per protected mode (CRASH_OFF_ITERS for off) in
#                  seed ranges, CRASH_JOBS at a time,
#                  summed; fails on damage in a protected mode or a point hit < 100 times
#   make crash-combined  power cuts with a second fault (issue 43; docs/design/recovery.md, "Crash
#                  coverage"): CRASH_COMBINED_ITERS per protected mode of each of the
#                  lifecycles CRASH_COMBINED_LCS (eio-cut, lost-before, rebuild-run, scrub-run, readd-run), CRASH_JOBS at a time,
#                  each summed;
#                  fails on damage in a protected mode
#   make bitrot    the bit rot campaign of issue 27 (tools/crash/bitrot.py; root, FUSE):
#                  BITROT_COPIES copies of one RAID5 volume, 1-4 bytes changed in used
#                  blocks of one or two members, fsck -n and a read-only mount reading
#                  everything, in build/ (sanitizers); fails on a crash, a hang or a
#                  silent wrong read with one member damaged (file data: once
#                  BITROT_DATA_CSUM=1, for volumes with data checksums)
#   make faults-long  the fault sweep of issue 43 (tests/faults/test_fault_sweep.c) at every
#                  call, each with and without a power cut where the fault was met, in
#                  build/ (sanitizers); prints its coverage table; fails on any damage
#   make fuzz      libFuzzer (clang) in build-fuzz/: every target of tests/fuzz/ for
#                  FUZZ_TIME seconds each (docs/FUZZING.md); fails naming a target that
#                  crashed and its artifact

SHELL := /bin/bash
BUILD ?= build
RELEASE ?= build-release
VGBUILD ?= build-valgrind
MESON_TEST_FLAGS ?= --print-errorlogs --num-processes 2

# make fuzz only: clang and its libFuzzer runtime (libclang_rt.fuzzer)
FUZZ_PACKAGES := clang libclang-rt-14-dev time
# make bench-slow only: nbdkit's filter header, for tools/bench/nbdkit_flushdelay.c
BENCH_SLOW_PACKAGES := nbdkit-plugin-dev
PACKAGES := libfuse3-dev fuse3 liburing-dev libisal-dev libcmocka-dev meson ninja-build \
	pkg-config gcc valgrind fio sqlite3 fuse2fs e2fsprogs btrfs-progs rsync libjemalloc-dev \
	python3 xz-utils tar groff-base bash-completion libnbd-dev nbdkit libblkid-dev

.PHONY: all deps build test unit valgrind demo demo-stop release clean crash-long crash-combined fuzz fuzz-deps \
	bench-scrub bench-slow bitrot faults-long

all: build

deps:
	@missing=""; for p in $(PACKAGES) $(EXTRA_PACKAGES); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		if [ "$$(id -u)" != 0 ]; then echo "make deps: not root; install these first:$$missing" >&2; exit 1; fi; \
		DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

$(BUILD)/build.ninja:
	meson setup $(BUILD) -Db_sanitize=address,undefined -Db_lundef=false -Dwerror=true

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD)

# Both runs go on to the end; the last line sums them up ("N passed, N failed").
test: build
	@rc=0; \
	meson test -C $(BUILD) $(MESON_TEST_FLAGS) 2>&1 | tee $(BUILD)/test.out; \
	[ $${PIPESTATUS[0]} = 0 ] || rc=1; \
	$(MAKE) --no-print-directory valgrind 2>&1 | tee $(BUILD)/valgrind.out; \
	[ $${PIPESTATUS[0]} = 0 ] || rc=1; \
	awk '/^Ok:/ || /^Expected Fail:/ { p += $$NF } /^Fail:/ || /^Timeout:/ || /^Unexpected Pass:/ { f += $$NF } \
	     /^Skipped:/ { s += $$NF } END { printf "tests: %d passed, %d failed, %d skipped\n", p, f, s }' \
	     $(BUILD)/test.out $(BUILD)/valgrind.out; \
	exit $$rc

unit: build
	meson test -C $(BUILD) $(MESON_TEST_FLAGS) --suite unit

$(VGBUILD)/build.ninja:
	meson setup $(VGBUILD) -Dwerror=true

valgrind: deps $(VGBUILD)/build.ninja
	ninja -C $(VGBUILD)
	meson test -C $(VGBUILD) $(MESON_TEST_FLAGS) --suite unit --setup valgrind

$(RELEASE)/build.ninja:
	meson setup $(RELEASE) --buildtype=release -Dtests=false -Djemalloc=enabled

release: deps $(RELEASE)/build.ninja
	ninja -C $(RELEASE)

# Iterations per protected mode and for off (which must only show damage),
# processes, iterations per range (one output file each), member files (tmpfs
# takes O_DIRECT: cheaper cuts), points not required (none: every point must be
# in flight at 100 cuts).
CRASH_ITERS ?= 20000
CRASH_OFF_ITERS ?= 400
# Iterations per protected mode (seeds from 1000000) whose cut is aimed, by
# seed, at one of CRASH_AIM: points random cuts seldom reach (a full
# checkpoint: never, the background one keeps up).
CRASH_AIM_ITERS ?= 300
CRASH_AIM ?= JNL_CP_FULL,RAID_BITMAP_SET,RAID_BITMAP_CLEAR
# Two more aimed shares of CRASH_AIM_ITERS: (C6), a flush only declared mode
# issues (seeds from 2000000), and recovery's resync, cut in a recovery cut
# after a row it repaired (every mode, seeds from 3000000).
CRASH_AIM_DECLARED ?= JNL_LOG_FLUSH
CRASH_AIM_RECOVERY ?= JNL_RESYNC
CRASH_JOBS ?= 2
CRASH_CHUNK ?= 100
CRASH_SEED ?= 1
CRASH_DIR ?= /dev/shm/jgrfs-crash-long
# (D3), the lazy checksum region's writes, needs volumes with data checksums,
# which these runs do not make (crashtest_inproc aims at it)
CRASH_SKIP ?= FS_DCSUM_INIT

# Each job runs its share of off first, then of the aimed cuts, then the
# protected modes one chunk each in turn, so a run stopped early (or continued later: seed ranges add up) has
# the three protected modes at the same count.
crash-long: release
	@mkdir -p $(CRASH_DIR); rm -f $(CRASH_DIR)/range-*.out; \
	for j in $$(seq 0 $$(( $(CRASH_JOBS) - 1 ))); do \
		( run() { m=$$1 f=$$2 n=$$3; shift 3; \
			$(RELEASE)/tools/jgrfs-crash crashtest --in-process --mode $$m --seed $(CRASH_SEED) \
				--seed-from $$f --count $$n --dir $(CRASH_DIR)/job$$j "$$@" \
				> $(CRASH_DIR)/range-$$m-$$f.out 2> $(CRASH_DIR)/range-$$m-$$f.err; }; \
		  per=$$(( $(CRASH_OFF_ITERS) / $(CRASH_JOBS) )); s=$$(( j * per )); \
		  run off $$s $$per; \
		  per=$$(( $(CRASH_AIM_ITERS) / $(CRASH_JOBS) )); s=$$(( 1000000 + j * per )); \
		  for mode in declared bitmap full; do run $$mode $$s $$per --aim $(CRASH_AIM); done; \
		  run declared $$(( s + 1000000 )) $$per --aim $(CRASH_AIM_DECLARED); \
		  for mode in declared bitmap full; do \
			run $$mode $$(( s + 2000000 )) $$per --aim $(CRASH_AIM_RECOVERY) --lifecycle recovery-cut; \
		  done; \
		  per=$$(( $(CRASH_ITERS) / $(CRASH_JOBS) )); s=$$(( j * per )); e=$$(( (j + 1) * per )); \
		  while [ $$s -lt $$e ]; do \
			n=$$(( e - s )); [ $$n -gt $(CRASH_CHUNK) ] && n=$(CRASH_CHUNK); \
			for mode in declared bitmap full; do run $$mode $$s $$n; done; \
			s=$$(( s + n )); \
		  done ) & \
	done; wait; \
	grep -h 'DAMAGE\|HANG' $(CRASH_DIR)/range-*.out | grep -v '^off ' ; \
	$(RELEASE)/tools/jgrfs-crash crashtest --sum --min-coverage 100 --skip-points "$(CRASH_SKIP)" \
		$(CRASH_DIR)/range-*.out

CRASH_COMBINED_ITERS ?= 2000
CRASH_COMBINED_LCS ?= eio-cut lost-before rebuild-run scrub-run readd-run
CRASH_COMBINED_DIR ?= /dev/shm/jgrfs-crash-combined

# Each job runs its share of every lifecycle of two faults in chunks, the three
# protected modes in turn; a table per lifecycle (the "second fault" table says
# how many cuts came after the member failed, and how many recoveries were forced).
crash-combined: release
	@mkdir -p $(CRASH_COMBINED_DIR); rm -f $(CRASH_COMBINED_DIR)/range-*.out; \
	for j in $$(seq 0 $$(( $(CRASH_JOBS) - 1 ))); do \
		( per=$$(( $(CRASH_COMBINED_ITERS) / $(CRASH_JOBS) )); \
		  for lc in $(CRASH_COMBINED_LCS); do \
		  s=$$(( j * per )); e=$$(( (j + 1) * per )); \
		  while [ $$s -lt $$e ]; do \
			n=$$(( e - s )); [ $$n -gt $(CRASH_CHUNK) ] && n=$(CRASH_CHUNK); \
			for mode in declared bitmap full; do \
				$(RELEASE)/tools/jgrfs-crash crashtest --in-process --mode $$mode \
					--lifecycle $$lc --seed $(CRASH_SEED) --seed-from $$s --count $$n \
					--dir $(CRASH_COMBINED_DIR)/job$$j \
					> $(CRASH_COMBINED_DIR)/range-$$lc-$$mode-$$s.out \
					2> $(CRASH_COMBINED_DIR)/range-$$lc-$$mode-$$s.err; \
			done; \
			s=$$(( s + n )); \
		  done; done ) & \
	done; wait; \
	grep -h 'DAMAGE\|HANG' $(CRASH_COMBINED_DIR)/range-*.out; rc=0; \
	for lc in $(CRASH_COMBINED_LCS); do \
		echo "== $$lc"; \
		$(RELEASE)/tools/jgrfs-crash crashtest --sum $(CRASH_COMBINED_DIR)/range-$$lc-*.out || rc=1; \
	done; exit $$rc

# Copies, seed (copy i of a seed is the same damage every time: --only i runs it
# alone), work directory (member copies; tmpfs: they are read with O_DIRECT),
# BITROT_DATA_CSUM=1: a silent wrong read of file data with one member damaged
# fails too (for when file data has checksums; today it is counted as expected).
BITROT_COPIES ?= 1000
BITROT_SEED ?= 1
BITROT_DIR ?= /dev/shm/jgrfs-bitrot
BITROT_DATA_CSUM ?=
BITROT_ARGS ?=
bitrot: build
	python3 tools/crash/bitrot.py --jgrfs $(BUILD)/tools/jgrfs --copies $(BITROT_COPIES) \
		--seed $(BITROT_SEED) --dir $(BITROT_DIR) \
		$(if $(BITROT_DATA_CSUM),--data-checksums) $(BITROT_ARGS) 2>&1 | tee $(BITROT_DIR).out; \
	exit $${PIPESTATUS[0]}

# Every injection point of the sweep, with and without a cut (make test: every 5th).
FAULTS_OUT ?= $(BUILD)/faults-long.out
faults-long: build
	JGRFS_FAULT_STRIDE=1 $(BUILD)/tests/faults/test_fault_sweep 2>&1 | tee $(FAULTS_OUT); \
	exit $${PIPESTATUS[0]}

BENCH_SCRUB_ARGS ?= -r 3
bench-scrub: release
	bash tools/bench/bench_scrub.sh $(BENCH_SCRUB_ARGS) $(RELEASE)/tools/jgrfs

# -p PROFILES, -r repeats, -t seconds, -o where the raw output goes, -l request
# counts per configuration: tools/bench/bench_slow.sh's header.
BENCH_SLOW_ARGS ?= -r 5 -t 3
bench-slow: release
	@$(MAKE) --no-print-directory deps EXTRA_PACKAGES="$(BENCH_SLOW_PACKAGES)"
	bash tools/bench/bench_slow.sh $(BENCH_SLOW_ARGS) $(RELEASE)/tools/jgrfs

demo: build
	sh tools/demo.sh $(BUILD)/tools/jgrfs

demo-stop:
	sh tools/demo.sh --stop $(BUILD)/tools/jgrfs

# libFuzzer: seeds from tests/fuzz/corpus/<target>, new inputs kept in
# $(FUZZ_BUILD)/corpus/<target>, crashes in $(FUZZ_BUILD)/artifacts/<target>/.
# UBSan must stop at its first report, or the fuzzer never sees it.
FUZZ_BUILD ?= build-fuzz
FUZZ_TIME ?= 60
FUZZ_MAX_LEN ?= 16420
# seconds one input may run before it counts as a hang (libFuzzer's default is 1200)
FUZZ_HANG ?= 10
FUZZ_TARGETS ?= raid_assemble jnl_recover fs_mount_fsck dir xattr fuse_ioctl

fuzz-deps:
	@$(MAKE) --no-print-directory deps EXTRA_PACKAGES="$(FUZZ_PACKAGES)"

$(FUZZ_BUILD)/build.ninja:
	CC=clang meson setup $(FUZZ_BUILD) -Dfuzz=true -Dtests=false \
		-Db_sanitize=address,undefined -Db_lundef=false -Dwerror=true

fuzz: fuzz-deps $(FUZZ_BUILD)/build.ninja
	ninja -C $(FUZZ_BUILD)
	@failed=""; \
	for t in $(FUZZ_TARGETS); do \
		mkdir -p $(FUZZ_BUILD)/corpus/$$t $(FUZZ_BUILD)/artifacts/$$t; \
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		/usr/bin/time -f '%U %S' -o $(FUZZ_BUILD)/fuzz-$$t.cpu \
		$(FUZZ_BUILD)/tests/fuzz/fuzz_$$t -max_total_time=$(FUZZ_TIME) -max_len=$(FUZZ_MAX_LEN) \
			-timeout=$(FUZZ_HANG) -print_final_stats=1 -artifact_prefix=$(FUZZ_BUILD)/artifacts/$$t/ \
			$(FUZZ_BUILD)/corpus/$$t tests/fuzz/corpus/$$t > $(FUZZ_BUILD)/fuzz-$$t.log 2>&1; \
		rc=$$?; \
		last=$$(grep -E '^#[0-9]+' $(FUZZ_BUILD)/fuzz-$$t.log | tail -1); \
		execs=$$(sed -n 's/^stat::number_of_executed_units: *//p' $(FUZZ_BUILD)/fuzz-$$t.log); \
		rate=$$(sed -n 's/^stat::average_exec_per_sec: *//p' $(FUZZ_BUILD)/fuzz-$$t.log); \
		cpu=$$(tail -n 1 $(FUZZ_BUILD)/fuzz-$$t.cpu 2>/dev/null | awk '{ printf "%.0f", $$1 + $$2 }'); \
		echo "fuzz $$t: execs=$${execs:-?} ($${rate:-?}/s) cpu=$${cpu:-?}s $$(echo "$$last" | grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[^ ]+')"; \
		if [ $$rc != 0 ]; then \
			art=$$(sed -n 's/.*Test unit written to \(.*\)/\1/p' $(FUZZ_BUILD)/fuzz-$$t.log | tail -1); \
			echo "fuzz $$t: FAILED (exit $$rc), artifact $${art:-none}, log $(FUZZ_BUILD)/fuzz-$$t.log"; \
			failed="$$failed $$t"; \
		fi; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz: failed:$$failed"; exit 1; fi; \
	echo "fuzz: every target ran $(FUZZ_TIME) s without a finding"

clean:
	rm -rf $(BUILD) $(RELEASE) $(VGBUILD) $(FUZZ_BUILD)
