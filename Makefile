# qwrap — build, test, lint, static build, install, Debian package.

CARGO  ?= cargo
TARGET ?= x86_64-unknown-linux-gnu
PREFIX ?= /usr/local
STATIC_RUSTFLAGS := -C target-feature=+crt-static -C relocation-model=static
STATIC_BIN := target/$(TARGET)/release/qwrap

# What `make install` installs: the binary `make` or `make static` built.
BIN ?= $(firstword $(wildcard $(STATIC_BIN) target/release/qwrap))
GENERATED = $(dir $(BIN))qwrap-generated

.PHONY: build test test-private-pid lint static install uninstall install-test smoke container-test clean bench fuzz fuzz-smoke deb deb-test kernel-test bwrap-suite

build:
	$(CARGO) build --release

# The whole suite: unit tests and the integration tests that create real
# namespaces (as root they run again as an unprivileged uid).
test:
	$(CARGO) test --workspace --features fault-injection --no-fail-fast
	$(MAKE) test-private-pid

# The boundary suites again with --pid private (QWRAP_PID reaches every
# sandbox the tests start): each layer must hold in that mode too.
PRIVATE_PID_SUITES = boundary hostile host_processes layers leftovers setuid_routes verify secrets \
	sockets_daily git_guard egress caches run run_process plan_calls daily_messages
test-private-pid:
	QWRAP_PID=private $(CARGO) test --features fault-injection --no-fail-fast \
		$(addprefix --test ,$(PRIVATE_PID_SUITES))

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets --features fault-injection -- -D warnings

# One static binary, no shared libraries: `file` says "statically linked".
static:
	RUSTFLAGS="$(STATIC_RUSTFLAGS)" $(CARGO) build --release --target $(TARGET)
	@file $(STATIC_BIN) | grep -q 'statically linked' || { file $(STATIC_BIN); echo "not statically linked" >&2; exit 1; }
	@file $(STATIC_BIN)

# Runs the static binary's sandbox once and checks the boundary from inside.
smoke: static
	sh scripts/smoke.sh $(STATIC_BIN)

# The static binary in Podman containers, unprivileged: the default seccomp
# profile (namespaces), and one that refuses namespaces and mounts as
# Docker's default does (--isolation landlock). SKIP where podman cannot run.
container-test: static
	sh scripts/container-test.sh $(STATIC_BIN)

# Installs what `make` (or `make static`) built; it builds nothing, so
# `sudo make install` needs no cargo in root's PATH. The binary, man pages,
# bash/zsh/fish completions, the docs, and the AppArmor profile for the
# installed path (loaded when AppArmor is on).
install:
	@test -n "$(BIN)" -a -x "$(BIN)" || { echo "nothing built: run make (or make static) first" >&2; exit 1; }
	@test -d "$(GENERATED)/man" || { echo "no generated man pages beside $(BIN): rebuild with make" >&2; exit 1; }
	sh scripts/install.sh "$(BIN)" "$(GENERATED)" "$(DESTDIR)" "$(PREFIX)"

# Removes what `make install` installed (same DESTDIR and PREFIX), its
# AppArmor profile included.
uninstall:
	sh scripts/uninstall.sh "$(DESTDIR)" "$(PREFIX)"

# Installs into a scratch DESTDIR and checks man, completions and the binary.
install-test: build
	sh scripts/install-test.sh

# Debian 12's Linux 6.1 and Debian 11's Linux 5.10 under QEMU (TCG): the
# kernel checks on a busybox initramfs as root and as an unprivileged uid on
# both mount APIs, then a Debian 12 userland that mmdebstrap builds (cached
# in the work dir): 1,000 pipelines in dash, bash and busybox sh and make -j4
# of 200 targets, bare and in qwrap (default and --landlock off), as root and
# as uid 1001. Fails on any FAIL, or where the Debian root cannot be built
# unless KERNEL_TEST_NO_DEBIAN=1. Needs root, qemu-system-x86, busybox-static,
# mmdebstrap and cpio (.ci/run installs them). See tests/kernel/run.sh.
kernel-test: static
	sh tests/kernel/run.sh $(STATIC_BIN)

# bubblewrap 0.11.1's own suite against qwrap named bwrap (from BWRAP_SUITE;
# see tests/bwrap-suite/run.sh), as root and unprivileged, on both mount APIs.
BWRAP_SUITE ?= ../shared/bubblewrap-0.11.1-tests
bwrap-suite: build
	bash tests/bwrap-suite/run.sh $(BWRAP_SUITE) target/release/qwrap
	QWRAP_MOUNT_API=legacy bash tests/bwrap-suite/run.sh $(BWRAP_SUITE) target/release/qwrap

# A Debian package of the static binary: target/deb/qwrap_VERSION_ARCH.deb.
deb: static
	sh scripts/deb.sh $(STATIC_BIN)

# Installs the package with dpkg into a scratch root and runs qwrap verify
# from there, as root and as nobody.
deb-test: deb
	sh scripts/deb-test.sh

clean:
	$(CARGO) clean

# Start-up, mount-count growth, verify/inspect, size and RSS beside bubblewrap
# (installs bubblewrap and GNU time if missing). QWRAP_BENCH_QUICK=1 for
# fewer runs.
bench:
	python3 bench/bench.py

# Fuzzing (cargo-fuzz, nightly): each target for FUZZ_SECONDS, starting from
# the committed seed corpus in fuzz/corpus; findings land in fuzz/artifacts.
FUZZ_SECONDS ?= 600
FUZZ_FLAGS ?=
FUZZ_TARGETS := mountinfo unix_sockets git_pointers config resolver egress_request

fuzz:
	cd fuzz && for t in $(FUZZ_TARGETS); do \
		mkdir -p work/$$t && \
		cargo +nightly fuzz run $$t work/$$t corpus/$$t -- -max_total_time=$(FUZZ_SECONDS) $(FUZZ_FLAGS) || exit 1; \
	done

# The smoke run in the test gate is reproducible: a fixed seed and a fixed
# number of inputs explore the same inputs on every machine, so it fails only
# on a change; `make fuzz` searches at random for new findings.
fuzz-smoke:
	rm -rf fuzz/work
	$(MAKE) fuzz FUZZ_SECONDS=120 FUZZ_FLAGS="-seed=1 -runs=200000"
