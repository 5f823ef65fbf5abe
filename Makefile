# rxtune: the two commands (make run, make test) and their building blocks.
# Works as root on a fresh Debian 12 machine: missing Debian packages are installed first.
# make run also works on Debian 13 (packaging/debian13/make_run.sh runs it on a plain trixie root).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

# The one runtime package whose name differs between the releases (trixie's 64-bit time_t
# transition renamed it).
GLIB_RUNTIME := $(if $(shell grep -qsx 'VERSION_CODENAME=bookworm' /etc/os-release && echo y),libglib2.0-0,libglib2.0-0t64)

APT_PACKAGES := build-essential meson ninja-build pkg-config clang llvm \
	libnl-3-dev libnl-route-3-dev libnl-genl-3-dev libyaml-cpp-dev catch2 prometheus-cpp-dev \
	libdpdk-dev libbpf-dev bpftool libcli11-dev nlohmann-json3-dev libsystemd-dev \
	libexpected-dev libcrypt-dev libmicrohttpd-dev libgnutls28-dev iproute2 ethtool python3 prometheus curl prometheus-node-exporter strace \
	scdoc bash-completion debhelper dpkg-dev lintian fakeroot systemd man-db util-linux \
	mmdebstrap podman runc python3-yaml libcap2-bin \
	$(GLIB_RUNTIME) libnuma1 libcap-ng0 \
	qemu-system-x86 busybox-static

BUILD      ?= build
BUILD_ASAN ?= build-asan
BUILD_FUZZ ?= build-fuzz
FUZZ_SECONDS ?= 2
# make fuzz-soak: each target until it has run FUZZ_SOAK_RUNS inputs or FUZZ_SOAK_SECONDS, whichever
# comes first; what it finds is merged, minimised, into tests/fuzz/corpus/.
FUZZ_SOAK_RUNS ?= 1000000
FUZZ_SOAK_SECONDS ?= 600
FUZZ_TARGETS := $(shell awk '!/^\#/ && NF {print $$1}' tests/fuzz/targets.txt)

.PHONY: all deps bench-deps build build-asan build-fuzz build-for-test fuzz-soak werror run test deb image lab vm-test vm-test-irqpin cross-arm64 vm-test-arm64 debian13 debian13-run vm-test-debian13 clean

all: build

# Benchmarks only (make lab, bench/datapath_bench.sh, bench/steer_bench.sh): wrk to check our load
# generator against, dpdk-testpmd (in dpdk-dev) as rxtune-dp's peer, nftables for the receive-bound
# scenarios, matplotlib for the charts, strace to count the journal's saves.
BENCH_PACKAGES := wrk dpdk-dev nftables python3-matplotlib strace

deps:
	@$(call install_missing,$(APT_PACKAGES))

bench-deps: deps
	@$(call install_missing,$(BENCH_PACKAGES))

define install_missing
	missing=""; \
	for p in $(1); do \
	  dpkg-query -W -f='$${Status}' "$$p" 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "make deps: installing$$missing"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -q && apt-get install -y -q --no-install-recommends $$missing; \
	fi
endef

# The main build is the release build a user or a distribution makes (-O3, NDEBUG): the tests run
# against it, and make test compiles it with warnings as errors, so an optimiser-only warning
# cannot come back. Without -g: debug information took a third of its compile time (and half of a
# test file's); the ASan/UBSan build has it, for the backtraces that matter.
$(BUILD)/build.ninja: | deps
	meson setup $(BUILD) --prefix=/usr -Dbuildtype=release -Ddebug=false

# -g1 (line tables): the sanitizers' reports keep their file:line, at a fifth less compile time.
# A unity build (8 files per compile): at -O0 under ASan/UBSan most of a file's time went to
# generating the same inline code as its neighbours; joined, the tree compiles in about half the
# time. The release build is not one: it is what users build, and it finds a missing #include.
ASAN_SETUP := -Dbuildtype=debug -Db_sanitize=address,undefined -Db_lundef=false -Dcpp_args=-g1 -Dunity=on -Dunity_size=8
$(BUILD_ASAN)/build.ninja: | deps
	meson setup $(BUILD_ASAN) $(ASAN_SETUP)

# Optimised (-O2) like OSS-Fuzz's builds: at -O0 the sanitizers made a legal worst case (the
# alias walk's 100000 nodes) take seconds, close to the per-input time limit, and runs were 10x fewer.
$(BUILD_FUZZ)/build.ninja: | deps
	CC=clang CXX=clang++ meson setup $(BUILD_FUZZ) -Dfuzz=true -Dbuildtype=debugoptimized \
	  -Db_sanitize=address,undefined -Db_lundef=false

build: deps $(BUILD)/build.ninja
	meson compile -C $(BUILD)

build-asan: deps $(BUILD_ASAN)/build.ninja
	meson compile -C $(BUILD_ASAN)

build-fuzz: deps $(BUILD_FUZZ)/build.ninja
	ninja -C $(BUILD_FUZZ) $(addprefix tests/,$(FUZZ_TARGETS))

fuzz-soak: build-fuzz
	BUILD_FUZZ=$(BUILD_FUZZ) FUZZ_SOAK_RUNS=$(FUZZ_SOAK_RUNS) FUZZ_SOAK_SECONDS=$(FUZZ_SOAK_SECONDS) tests/fuzz/soak.sh

# Warnings are errors in make test, not in the project's defaults (a newer compiler's new warnings
# must not break a user's or a distribution's build).
werror: deps $(BUILD)/build.ninja $(BUILD_ASAN)/build.ninja $(BUILD_FUZZ)/build.ninja
	for b in $(BUILD) $(BUILD_ASAN) $(BUILD_FUZZ); do meson configure $$b -Dwerror=true; done
	meson configure $(BUILD) -Ddebug=false
	meson configure $(BUILD_ASAN) -Dunity=on -Dunity_size=8

# What make test builds, and no more (its time on 2 cores must stay under 25 minutes):
# - the release build: every default target but the unit tests, which run under ASan/UBSan only
#   (building them again for a run of the same logic without the sanitizers took ~3 minutes), and
#   what the integration tests depend on (tests/run_all.sh runs their binary, not meson test,
#   which would build it: the XDP program of "someone else's");
# - the ASan/UBSan build: the unit tests and the rxtune binary, which a subset of the integration
#   tests drives against the real kernel (tests/run_all.sh);
# - the fuzz targets.
build-for-test: deps $(BUILD)/build.ninja $(BUILD_ASAN)/build.ninja $(BUILD_FUZZ)/build.ninja
	ninja -C $(BUILD) $$(meson introspect $(BUILD) --targets --tests | python3 -c 'import json, os, sys; \
	  i = json.load(sys.stdin); needs = {d for t in i["tests"] if t["name"] == "integration" for d in t["depends"]}; \
	  print(" ".join(os.path.relpath(f, sys.argv[1]) for t in i["targets"] \
	    if (t["build_by_default"] and t["name"] != "unit_tests") or t["id"] in needs for f in t["filename"]))' $(BUILD))
	ninja -C $(BUILD_ASAN) tests/unit_tests agent/rxtune
	ninja -C $(BUILD_FUZZ) $(addprefix tests/,$(FUZZ_TARGETS))

# Read-only on this host: shows what rxtune sees.
run: build
	./$(BUILD)/agent/rxtune detect
	@echo
	./$(BUILD)/agent/rxtune plan || [ $$? -eq 2 ]

test: werror
	$(MAKE) build-for-test
	BUILD=$(BUILD) BUILD_ASAN=$(BUILD_ASAN) BUILD_FUZZ=$(BUILD_FUZZ) FUZZ_SECONDS=$(FUZZ_SECONDS) \
	  tests/run_all.sh

# The single-queue lab (docs/LAB.md): every scenario side by side, then the capacity ladder.
# LAB_ARGS="--duration 5 --scenarios untuned,gateway" narrows it.
LAB_ARGS ?= --safe-point --json build/lab-results.json
lab: build bench-deps
	BUILD=$(CURDIR)/$(BUILD) python3 bench/lab.py $(LAB_ARGS)

# The booted lab (docs/VM.md): the kernel guest, the flow limit on Debian 13's kernel (make test
# boots 5.10, 6.1 and 7.3 for it), busy-poll NAPI on 7.3 (virtio-net, e1000e) and its refusal on
# 6.1 and 6.12, then rxtune's .deb on Debian 12 with systemd as
# PID 1, real NIC drivers, each kernel of VM_KERNELS, and an upgrade, downgrade and purge under a
# running daemon (6.1); the matrix's raw results in
# $(BUILD)/vm-matrix.json. Guests are cached by content in $(BUILD)/vm-cache.
VM_KERNELS ?= 6.1,6.12
vm-test: build
	DEB_BUILD_OPTIONS="nocheck parallel=$$(nproc)" $(MAKE) --no-print-directory deb
	python3 tests/vm/debian12_kernel.py $(BUILD)
	python3 tests/vm/flow_limit_kernel.py $(BUILD) --kernels 6.12
	python3 tests/vm/busypoll_kernel.py $(BUILD) --kernels 6.1,6.12,7.3
	python3 tests/vm/system_lab.py $(BUILD) "$$(ls build-deb/rxtune_*_*.deb | grep -v dbgsym)" --kernels $(VM_KERNELS) \
	  --json $(BUILD)/vm-matrix.json
	python3 tests/vm/system_lab.py $(BUILD) "$$(ls build-deb/rxtune_*_*.deb | grep -v dbgsym)" --kernels 6.1 --scenario upgrade

# The IRQ-pin scenario of the booted lab alone, IRQPIN_ROUNDS rounds in a row per kernel (one boot each).
IRQPIN_ROUNDS ?= 5
vm-test-irqpin: build
	DEB_BUILD_OPTIONS="nocheck parallel=$$(nproc)" $(MAKE) --no-print-directory deb
	python3 tests/vm/system_lab.py $(BUILD) "$$(ls build-deb/rxtune_*_*.deb | grep -v dbgsym)" --kernels $(VM_KERNELS) \
	  --scenario irqpin --rounds $(IRQPIN_ROUNDS)

# arm64: rxtune, rxtune-dp and the BPF objects cross-built in a multiarch root of their own, the
# unit tests run under qemu-aarch64-static, the arm64 .debs built and checked with lintian
# (packaging/cross/arm64.sh; output in build-arm64/).
cross-arm64: deps
	packaging/cross/arm64.sh

# Debian 13 (trixie): the release build and the ASan/UBSan unit tests in a trixie root, the amd64
# .debs installed with apt on a plain trixie root (packaging/debian13/build.sh, output in
# build-debian13/), then the arm64 build, unit tests and .debs in a trixie multiarch root (output
# in build-arm64-trixie/), then make run as a Debian 13 user meets it (debian13-run).
debian13: deps
	packaging/debian13/build.sh
	CROSS_SUITE=trixie packaging/cross/arm64.sh
	packaging/debian13/make_run.sh

# README's make run on a plain Debian 13 root: the packages by their trixie names, the build,
# detect and plan (packaging/debian13/make_run.sh; output in build-debian13/make-run/).
debian13-run: deps
	packaging/debian13/make_run.sh

# The booted lab on Debian 13 (docs/VM.md): the trixie .deb (packaging/debian13/build.sh, amd64)
# installed on a trixie system (systemd 257, trixie's irqbalance) with its 6.12 and
# trixie-backports' 7.3, the same scenario as the Debian 12 guests.
vm-test-debian13: build
	packaging/debian13/build.sh
	python3 tests/vm/system_lab.py $(BUILD) "$$(ls build-debian13/debs/rxtune_*_amd64.deb)" --suite trixie \
	  --json $(BUILD)/vm-matrix-debian13.json
	python3 tests/vm/system_lab.py $(BUILD) "$$(ls build-debian13/debs/rxtune_*_amd64.deb)" --suite trixie --kernels 6.12 \
	  --scenario upgrade

# The arm64 booted lab (docs/ARM64.md): those .debs installed on Debian 12 arm64 with systemd as
# PID 1 under qemu-system-aarch64 (virt, TCG), the vCPUs given two capacities by the device tree;
# the image is built with qemu-user through binfmt_misc, mounted for the build only and restored.
ARM64_LAB_PACKAGES := qemu-system-arm qemu-user-static arch-test device-tree-compiler
vm-test-arm64: cross-arm64
	@$(call install_missing,$(ARM64_LAB_PACKAGES))
	python3 tests/vm/arm64_lab.py $(BUILD) "$$(ls build-arm64/debs/rxtune_*_arm64.deb)" \
	  "$$(ls build-arm64/debs/rxtune-datapath_*_arm64.deb)" --json $(BUILD)/vm-matrix-arm64.json

# Debian package(s) into build-deb/: dpkg-buildpackage on a clean copy of the tree.
deb: deps
	rm -rf build-deb && mkdir -p build-deb/src
	# One tar for the tree's ~9000 files (the fuzz corpus is most of them): a cp per file took 45 s.
	git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -xf - -C build-deb/src
	cp -r packaging/debian build-deb/src/debian
	cd build-deb/src && dpkg-buildpackage -us -uc -b -j$$(nproc) > ../build.log 2>&1 || { tail -50 ../build.log; exit 1; }
	ls build-deb/*.deb

# The container image the Kubernetes DaemonSet runs, from the .deb: build-image/rxtune-VERSION.oci.tar
# (podman load -i ..., or ctr -n k8s.io images import ...), also loaded into this host's podman.
image: deb
	packaging/image/build.sh "$$(ls build-deb/rxtune_*_*.deb | grep -v dbgsym)" build-image

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_FUZZ) build-deb build-image
