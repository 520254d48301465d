# Strata: one hand-written Makefile.
#   make            build the library (build/libstrata.a) and the CLI (build/strata)
#   make test       install what the tests need, build, run every test: unit, end-to-end,
#                   conformance (when its rule exists), then unit + end-to-end under ASan+UBSan
#   make demo       install what the demo needs, build, deploy schemas/shop, feed it, query it
#   make deps       install the Debian packages Strata needs (apt-get, only when missing)
#   make deps-test  the same, plus the packages only the tests need
#   make unit       the cmocka unit tests          make e2e   the CLI end-to-end tests
#   make crash      feeds killed mid-way keep what they reported written, and indexes that
#                   agree with the documents (part of e2e)
#   make serve-test strata serve driven with curl, nghttp and h2load (part of e2e)
#   make asan       the unit and end-to-end tests under AddressSanitizer + UndefinedBehaviorSanitizer
#   make fuzz       build the fuzz targets with clang and libFuzzer, run each for FUZZ_SECONDS
#   make fuzz-replay  the fuzz targets over their committed corpora (part of make test)
#   make check-peer compare the runtime with ONNX Runtime's outputs (needs ../shared/peer)
#   make bench      the benchmarks in turn (bench/README.md): the runtime against ONNX Runtime
#                   (without ../shared/peer, Strata alone on models from build/bench/mkbench) and
#                   whole queries, text search against Xapian and SQLite FTS5, strata serve under
#                   wrk, libmicrohttpd against h2o, HNSW against hnswlib, a query's cost at
#                   100k and 1M documents; BENCH_ONLY=runtime|text|match|serve|http|ann runs one alone
#   make bench-gemm the GEMM alone on the models' shapes, against the core's FMA peak
#   make install    install strata, libstrata.a and strata.h under PREFIX (and DESTDIR)
#   make clean

# ---- settings ---------------------------------------------------------------
CC       ?= cc
PREFIX   ?= /usr/local
BUILD    ?= build
OPT      ?= -O2 -g
# The baseline is x86-64-v3 (AVX2 + FMA); wider kernels are chosen at run time.
ARCH     ?= -march=x86-64-v3
WARN     := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
ifeq ($(CI),true)
WARN     += -Werror
endif
SAN      ?=
# DEBUG=1 checks the invariants written as BASE_DEBUG_ASSERT (base/base.h);
# the sanitizer builds always do.
DEBUG    ?=
DEFS     := $(if $(DEBUG),-DSTRATA_DEBUG)
CFLAGS   := $(OPT) $(ARCH) $(WARN) $(SAN) $(DEFS) -std=c11 -D_GNU_SOURCE -I$(BUILD)/gen -MMD -MP
LDLIBS   := -llmdb -lstemmer -lprotobuf-c -ljansson -lexpat -lm -lpthread
ONNX_PROTO ?= /usr/include/onnx/onnx.proto
DEB_PKGS := build-essential pkg-config liblmdb-dev libprotobuf-c-dev protobuf-c-compiler \
            libonnx-dev libjansson-dev libcmocka-dev jq libstemmer-dev libexpat1-dev \
            libmicrohttpd-dev libnghttp2-dev
DEB_TEST_PKGS := libonnx-testdata curl python3 nghttp2-client
DEB_FUZZ_PKGS := clang libclang-rt-14-dev
# The bench peers (make bench; never make test): Xapian and SQLite FTS5 for the
# text case, wrk for the server case, hnswlib and FAISS (C++; FAISS pulls a BLAS) for
# the ANN case, h2o (its headers need OpenSSL's) and h2load for the HTTP
# library case.
DEB_BENCH_PKGS := g++ libxapian-dev libsqlite3-dev wrk libhnswlib-dev libfaiss-dev \
                  libh2o-evloop-dev libssl-dev nghttp2-client

# ---- sources (explicit lists, one per subsystem) -----------------------------
BASE_SRC    := base/err.c base/alloc.c base/arena.c base/dtype.c base/file.c base/hash.c base/tokenize.c base/cpu.c base/base64.c base/hex.c base/regex.c
RUNTIME_SRC := runtime/options.c runtime/blocks.c runtime/load.c runtime/graph.c runtime/resolve.c runtime/model.c runtime/exec.c runtime/buffers.c runtime/binding.c runtime/profile.c runtime/plan.c runtime/shape.c runtime/infer.c runtime/ops/registry.c \
               runtime/ops/elementwise.c runtime/ops/unary.c runtime/ops/cast.c runtime/ops/matmul.c runtime/ops/gemm.c runtime/ops/gemm_avx2.c runtime/ops/gemm_avx512.c runtime/ops/gemm_bf16.c runtime/ops/gemm_amx.c runtime/ops/qgemm.c runtime/ops/qgemm_avx2.c runtime/ops/qgemm_vnni.c runtime/ops/qgemm_vnni256.c runtime/ops/qgemm_amx.c runtime/ops/qlinear.c runtime/cpu.c runtime/ops/shape.c \
               runtime/ops/reduce.c runtime/ops/normalize.c \
               runtime/ops/conv.c runtime/ops/window.c runtime/ops/pool.c runtime/ops/nn.c runtime/ops/index.c runtime/ops/misc.c runtime/ops/resize.c runtime/ops/signal.c runtime/ops/loss.c \
               runtime/ops/training.c runtime/ops/random.c runtime/ops/rnn.c runtime/ops/einsum.c runtime/ops/quant.c runtime/ops/quant_avx512.c runtime/ops/string.c runtime/ops/sequence.c runtime/ops/control.c runtime/optimize.c runtime/ctxfile.c runtime/ctxhold.c runtime/epctx.c runtime/ctxgen.c runtime/ctxmodel.c runtime/ops/epcontext.c runtime/ops/fused.c runtime/ops/attn_avx512.c runtime/ops/attn_amx.c runtime/ops/vmath.c
STORE_SRC   := store/env.c store/doctype.c store/doc.c store/attr.c store/text.c store/text_elems.c store/text_blocks.c store/text_check.c store/text_pend.c store/text_tokens.c store/hnsw_rec.c store/hnsw.c store/hnsw_api.c store/hnsw_write.c store/hnsw_sync.c store/hnsw_multi.c store/hnsw_cache.c store/hnsw_snap.c \
               store/hnsw_dist.c store/hnsw_avx512.c store/dict.c
RANK_SRC    := rank/lex.c rank/parser.c rank/expr.c rank/parse.c rank/parse_profile.c rank/parse_text.c rank/parse_hnsw.c rank/props.c rank/schema.c rank/inputs.c rank/type.c rank/fn.c rank/compile_base.c rank/compile.c rank/gbdt.c rank/compile_tensor.c rank/compile_feature.c rank/compile_raw.c rank/explain.c rank/vm.c rank/dot.c rank/dot_avx512.c rank/firstdot.c rank/firstsum.c \
               rank/tensor.c rank/tensor_sparse.c rank/literal.c rank/model.c rank/query.c rank/profile.c rank/app.c rank/nearest.c
RANK_SRC    += rank/fields.c rank/docs.c rank/parse_field.c rank/types.c rank/indexing.c rank/indexing_check.c
ENGINE_SRC  := engine/db.c engine/queryprofile.c engine/contexts.c engine/feed.c engine/query.c engine/feed_ahead.c engine/grouping.c engine/embed.c engine/indexing.c engine/indexing_fn.c engine/snippet.c engine/summary.c engine/collapse.c engine/select_elements.c engine/services.c engine/tokenizer.c engine/visit.c engine/firstphase.c engine/searchpool.c engine/query_embed.c engine/imports.c engine/api.c engine/modeleval.c \
               engine/value/values.c engine/value/numbers.c engine/value/docid.c engine/value/json_alloc.c engine/value/json_read.c engine/value/tensor_json.c engine/value/tensor_sparse_json.c engine/value/fieldtypes.c engine/value/labels.c engine/value/position.c engine/value/predicate.c engine/value/result.c \
               engine/request/request.c engine/request/yql.c engine/request/yql_tree.c engine/request/grouping_expr.c engine/request/userquery.c engine/request/deadline.c engine/request/selection.c engine/request/selection_eval.c  \
               engine/match/textmatch.c engine/match/wsetmatch.c engine/match/samematch.c engine/match/attrmatch.c engine/match/fieldmatch.c engine/match/wand.c engine/match/nearest.c engine/match/typedmatch.c engine/match/ops.c engine/match/iter.c engine/match/compare.c engine/match/topk.c
# The programs: the `strata` command and `strata serve`, outside the library.
CLI_SRC     := cli/cli.c cli/cli_run.c cli/cli_test.c cli/http_client.c cli/tool.c serve/serve.c serve/serve_api.c serve/serve_req.c serve/serve_h2.c serve/serve_modeleval.c
GEN_SRC     := $(BUILD)/gen/onnx.pb-c.c

LIB_SRC  := $(BASE_SRC) $(RUNTIME_SRC) $(STORE_SRC) $(RANK_SRC) $(ENGINE_SRC)
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o) $(GEN_SRC:%.c=%.o)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/%.o)
LIB      := $(BUILD)/libstrata.a
CLI      := $(BUILD)/strata

# Unit tests: one cmocka binary per module (tests/test_<name>.c).
UNIT_TESTS := base match json_read feed_file runtime firstphase ops_elementwise ops_tensor store store_dict hnsw hnsw_snap ann multivec mvgraph nntune rank_parse text text_index text_blocks text_coll text_settings yql_ops text_query wand rank_eval rank_gbdt rank_phases rank_features compat engine yql ops_index ops_nn ops_rnn ops_quant qgemm qlinear ops_train ops_signal infer gemm plan optimize context pool binding embed fields summary types embedder indexing visit deadline selection api request queryprofile vespa_query grouping
TEST_BINS  := $(UNIT_TESTS:%=$(BUILD)/tests/test_%)
TEST_LIB_SRC := tests/modelbuild.c tests/opcase.c tests/apptest.c
TEST_LIB_OBJ := $(TEST_LIB_SRC:%.c=$(BUILD)/%.o)
TOOLS_SRC  := tests/mkshop.c
TOOLS      := $(BUILD)/tests/mkshop
# Vespa's tensor conformance cases (tests/data/README.md) and how many must pass.
TENSOR_CONFORMANCE     := $(BUILD)/tests/tensor_conformance
TENSOR_CONFORMANCE_MIN := 1987

.PHONY: all test unit e2e tensor-conformance crash serve-test vespa-apps vespa-readmes avx2 asan tsan demo deps deps-test deps-fuzz \
        check check-peer peer bench bench-runtime bench-gemm bench-text bench-serve bench-http bench-ann bench-match deps-bench install clean layers fuzz fuzz-replay
# Objects made by pattern chains (tests/test_x.o) are kept, not deleted as intermediates.
.SECONDARY:
all: $(LIB) $(CLI)

# ---- generated code (never committed) -----------------------------------------
# A grouped target: one protoc-c run makes both files, even under make -j.
$(BUILD)/gen/onnx.pb-c.c $(BUILD)/gen/onnx.pb-c.h &: $(ONNX_PROTO)
	@mkdir -p $(BUILD)/gen
	protoc-c --c_out=$(BUILD)/gen -I$(dir $(ONNX_PROTO)) $(ONNX_PROTO)
$(BUILD)/gen/onnx.pb-c.o: $(BUILD)/gen/onnx.pb-c.c
	$(CC) $(OPT) $(ARCH) $(SAN) -I$(BUILD)/gen -c $< -o $@

# ---- compile and link -------------------------------------------------------------
$(BUILD)/%.o: %.c | $(BUILD)/gen/onnx.pb-c.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@
# The AVX-512 kernels: called only after rt_cpu_isa() reports AVX-512.
$(BUILD)/runtime/ops/gemm_avx512.o: CFLAGS += -mavx512f -mavx512vl -mavx512bw -mavx512dq -mfma -mprfchw
$(BUILD)/runtime/ops/gemm_bf16.o: CFLAGS += -mavx512f -mavx512vl -mavx512bw -mavx512dq -mavx512bf16 -mfma
$(BUILD)/runtime/ops/qgemm_vnni.o: CFLAGS += -mavx512f -mavx512vl -mavx512bw -mavx512dq -mavx512vnni
$(BUILD)/runtime/ops/gemm_amx.o: CFLAGS += -mavx512f -mavx512vl -mavx512bw -mavx512dq -mfma -mamx-tile -mamx-bf16
$(BUILD)/runtime/ops/quant_avx512.o: CFLAGS += -mavx512f -mavx512vl -mavx512bw -mavx512dq
$(BUILD)/runtime/ops/attn_amx.o: CFLAGS += -mavx512f -mavx512vl -mavx512bw -mavx512dq -mavx512bf16 -mfma -mamx-tile -mamx-bf16
$(BUILD)/runtime/ops/qgemm_amx.o: CFLAGS += -mavx512f -mavx512vl -mavx512bw -mavx512dq -mamx-tile -mamx-int8
$(BUILD)/runtime/ops/attn_avx512.o: CFLAGS += -mavx512f -mavx512vl -mavx512bw -mavx512dq -mfma
$(BUILD)/store/hnsw_avx512.o: CFLAGS += -mavx512f -mavx512vl -mavx512bw -mavx512dq -mfma
$(BUILD)/rank/dot_avx512.o: CFLAGS += -mavx512f -mavx512vl -mavx512bw -mavx512dq

$(LIB): $(LIB_OBJ)
	rm -f $@
	ar rcs $@ $^

$(CLI): $(CLI_OBJ) $(LIB)
	$(CC) $(CFLAGS) -o $@ $(CLI_OBJ) $(LIB) $(LDLIBS) -lmicrohttpd -lnghttp2

$(BUILD)/tests/test_%: $(BUILD)/tests/test_%.o $(TEST_LIB_OBJ) $(LIB)
	$(CC) $(CFLAGS) -o $@ $< $(TEST_LIB_OBJ) $(LIB) $(LDLIBS) -lcmocka $(TEST_LDFLAGS)
# These see every model run the library makes: runtime_run is wrapped at
# link time, and their __wrap_runtime_run notes what it was given.
$(BUILD)/tests/test_engine $(BUILD)/tests/test_rank_eval: TEST_LDFLAGS := -Wl,--wrap=runtime_run
# Its clock is the test's: base_now is wrapped likewise.
$(BUILD)/tests/test_deadline: TEST_LDFLAGS := -Wl,--wrap=base_now

$(TENSOR_CONFORMANCE): $(BUILD)/tests/tensor_conformance.o $(LIB)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDLIBS)

# mkshop is no cmocka binary: it takes the model builder alone, not the test harness.
$(BUILD)/tests/mkshop: $(BUILD)/tests/mkshop.o $(BUILD)/tests/modelbuild.o $(LIB)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/tests/modelbuild.o $(LIB) $(LDLIBS)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

# ---- Debian packages --------------------------------------------------------------
# Installs the packages of $(1) that dpkg does not report as installed, with
# sudo when not root.  Silent when everything is there.
define install_missing
	@missing=; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' \
	    || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then sudo=; \
	  elif command -v sudo >/dev/null 2>&1; then sudo=sudo; \
	  else echo "make: missing Debian packages:$$missing (run as root, or install sudo)" >&2; exit 1; fi; \
	  echo "installing Debian packages:$$missing"; \
	  $$sudo apt-get update && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y $$missing; \
	fi
endef

deps:
	$(call install_missing,$(DEB_PKGS))
deps-test: deps
	$(call install_missing,$(DEB_TEST_PKGS))
deps-fuzz: deps
	$(call install_missing,$(DEB_FUZZ_PKGS))
deps-bench: deps
	$(call install_missing,$(DEB_BENCH_PKGS))

# ---- tests ----------------------------------------------------------------------
# make test: everything CI runs.  The dependency graph check, unit tests,
# the fuzz targets over their committed corpora, the CLI end-to-end scripts,
# Vespa's tensor conformance cases, the ONNX conformance suites, the unit
# and conformance tests again on the AVX2 kernels, then unit, corpora,
# end-to-end and conformance under ASan + UBSan, and the threads under TSan.
test: deps deps-test
	$(MAKE) all $(TEST_BINS) $(TOOLS) $(CONFORMANCE)
	$(MAKE) layers
	$(MAKE) unit
	$(MAKE) fuzz-replay
	$(MAKE) e2e
	$(MAKE) tensor-conformance
	$(MAKE) conformance
	$(MAKE) avx2
	$(MAKE) asan
	$(MAKE) tsan

check: test

# Every unit binary runs even when one fails; the summary line says how many
# failed and the target fails with them.
unit: $(TEST_BINS)
	@passed=0; failed=0; failing=; \
	for t in $(TEST_BINS); do \
	  echo "== $$t"; \
	  if $$t; then passed=$$((passed + 1)); \
	  else failed=$$((failed + 1)); failing="$$failing $${t##*/}"; fi; \
	done; \
	[ -z "$$failing" ] || echo "failing unit tests:$$failing"; \
	echo "unit: $$passed passed, $$failed failed"; \
	[ $$failed -eq 0 ]

# The library's file-level dependency graph (tests/layers.sh): no cycles
# inside a subsystem, and subsystems used one way only.  `sh tests/layers.sh
# build --edges` prints the graph.
layers: $(LIB)
	sh tests/layers.sh $(BUILD)

# e2e runs every script, each even when one before it fails.
e2e: $(CLI) $(TOOLS)
	@status=0; \
	STRATA=$(CLI) MKSHOP=$(BUILD)/tests/mkshop sh tests/e2e.sh || status=1; \
	STRATA=$(CLI) MKSHOP=$(BUILD)/tests/mkshop sh tests/phases.sh || status=1; \
	STRATA=$(CLI) MKSHOP=$(BUILD)/tests/mkshop sh tests/crash.sh || status=1; \
	STRATA=$(CLI) MKSHOP=$(BUILD)/tests/mkshop sh tests/crash_index.sh || status=1; \
	STRATA=$(CLI) MKSHOP=$(BUILD)/tests/mkshop sh tests/text.sh || status=1; \
	STRATA=$(CLI) MKSHOP=$(BUILD)/tests/mkshop sh tests/summary.sh || status=1; \
	STRATA=$(CLI) MKSHOP=$(BUILD)/tests/mkshop sh tests/features.sh || status=1; \
	STRATA=$(CLI) MKSHOP=$(BUILD)/tests/mkshop sh tests/text_fields.sh || status=1; \
	STRATA=$(CLI) MKSHOP=$(BUILD)/tests/mkshop sh tests/indexing.sh || status=1; \
	STRATA=$(CLI) MKSHOP=$(BUILD)/tests/mkshop sh tests/serve.sh || status=1; \
	STRATA=$(CLI) MKSHOP=$(BUILD)/tests/mkshop sh tests/strata_test.sh || status=1; \
	STRATA=$(CLI) MKSHOP=$(BUILD)/tests/mkshop sh tests/modeleval.sh || status=1; \
	STRATA=$(CLI) MKSHOP=$(BUILD)/tests/mkshop sh tests/feed_compat.sh || status=1; \
	exit $$status

# Vespa's tensor conformance cases through the expression compiler and VM: one
# line per failing case with its reason, then a JSON summary; fails when fewer
# than TENSOR_CONFORMANCE_MIN pass.
# First the runner itself: of tests/data/tensor_conformance_check.jsonl one case
# passes and three fail, each with its reason, and --min above the passes fails.
tensor-conformance: $(TENSOR_CONFORMANCE)
	@out=$$($(TENSOR_CONFORMANCE) tests/data/tensor_conformance_check.jsonl --min 2 2>&1); \
	status=$$?; \
	for want in '"passed": 1' 'line 2: reduce(a,sum,x): wrong result: cell {} is 6, expected 2' \
	  'line 3: reduce(a,avg: not parsed:' \
	  'line 4: a: wrong type: tensor(x[3]), expected tensor<float>(x[3])'; do \
	  printf '%s\n' "$$out" | grep -qF "$$want" || { echo "tensor_conformance: no '$$want'"; exit 1; }; \
	done; \
	[ $$status -ne 0 ] || { echo "tensor_conformance: --min did not fail"; exit 1; }
	$(TENSOR_CONFORMANCE) tests/data/vespa_tensor_spec.jsonl --min $(TENSOR_CONFORMANCE_MIN)

# strata serve driven with curl, a kill -9 during a feed included (tests/serve.sh).
serve-test: $(CLI) $(TOOLS)
	STRATA=$(CLI) MKSHOP=$(BUILD)/tests/mkshop sh tests/serve.sh

# Feeds killed with SIGKILL keep what they reported written (tests/crash.sh)
# and leave the indexes agreeing with the documents (tests/crash_index.sh).
crash: $(CLI) $(TOOLS)
	STRATA=$(CLI) MKSHOP=$(BUILD)/tests/mkshop sh tests/crash.sh
	STRATA=$(CLI) MKSHOP=$(BUILD)/tests/mkshop sh tests/crash_index.sh

# The AVX2 kernels, as an AVX2-only machine runs them: the same binaries
# with the AVX-512 paths switched off (STRATA_CPU=avx2, read at first use).
avx2: $(TEST_BINS) $(CONFORMANCE) $(CLI)
	STRATA_CPU=avx2 $(CLI) --version | grep -q 'kernels: avx2'
	STRATA_CPU=avx2 $(MAKE) unit conformance

# A second build tree with sanitizers; recoverable reports abort, so any
# finding fails the run.
ASAN_SAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
asan:
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
	  $(MAKE) BUILD=build-asan SAN='$(ASAN_SAN)' DEBUG=1 OPT='-O1 -g' unit fuzz-replay e2e tensor-conformance conformance

# The tests that run threads (the session buffer pool, compiled contexts
# loaded by several threads, queries sharing an application and its pools)
# again in build-tsan/ under ThreadSanitizer; a reported race fails the run.
TSAN_TESTS := pool context engine rank_eval firstphase hnsw_snap feed_file
tsan:
	$(MAKE) BUILD=build-tsan SAN='-fsanitize=thread' DEBUG=1 OPT='-O1 -g' $(TSAN_TESTS:%=build-tsan/tests/test_%)
	@for t in $(TSAN_TESTS); do \
	  echo "== build-tsan/tests/test_$$t"; \
	  TSAN_OPTIONS=halt_on_error=1 build-tsan/tests/test_$$t || exit 1; \
	done; echo "tsan: $(words $(TSAN_TESTS)) test programs clean"

# ---- fuzzing ------------------------------------------------------------------------
# One fuzz target per input the library parses (tests/fuzz/harness.h says
# how they are written): ONNX models (onnx), .sd schemas (sd), rank
# expressions (expr), YQL (yql), feeds of document operations (feed) and
# document selections (selection).
#
# make fuzz builds them with clang and libFuzzer under ASan + UBSan in
# build-fuzz/, the library included (instrumented for coverage), and runs
# each in turn for FUZZ_SECONDS on one core.  Each works on its corpus
# build-fuzz/corpus/<target>, which keeps what it found from run to run and
# is seeded (tests/fuzz/seeds.sh) with the committed seeds of
# tests/fuzz/corpus/<target> and, when $(FUZZ_SHARED) exists, with real
# inputs from it: schemas, feeds, models and the expressions of those
# schemas (never committed); the ONNX test data's models seed onnx too.
# tests/fuzz/<target>.dict, where there is one, is the target's libFuzzer
# dictionary: the keywords and names that mutations splice in.
# FUZZ_ARGS go to every libFuzzer run (e.g. FUZZ_ARGS='-jobs=1 -workers=1').
# Each run's output is in build-fuzz/fuzz-<target>.log; an input that
# crashes is saved as build-fuzz/artifacts/<target>-crash-<sha1> and the
# target fails.  Once fixed, that input goes into tests/fuzz/corpus/<target>.
#
# make fuzz-replay runs the same targets without libFuzzer (tests/fuzz/replay.c)
# over the committed corpora, so every input that once crashed stays a
# test; make test runs it in the normal and the asan build.
FUZZ_TARGETS  := onnx sd expr yql feed services tokenizer selection json
FUZZ_SECONDS  ?= 60
FUZZ_ARGS     ?=
FUZZ_SHARED   ?= ../shared
FUZZ_CC       ?= clang
FUZZ_SAN      := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all \
                 -fno-omit-frame-pointer
FUZZ_HARNESS_OBJ := $(BUILD)/tests/fuzz/harness.o $(BUILD)/tests/modelbuild.o
REPLAYS       := $(FUZZ_TARGETS:%=$(BUILD)/tests/fuzz/replay_%)
# Sanitizer settings of the runs: an allocation over 512 MiB fails (the
# library must report it) instead of exhausting the machine.
FUZZ_ENV      := ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1:max_allocation_size_mb=512 \
                 UBSAN_OPTIONS=print_stacktrace=1

# A libFuzzer binary (build-fuzz/ only: its objects carry the coverage hooks).
$(BUILD)/tests/fuzz/fuzz_%: $(BUILD)/tests/fuzz/fuzz_%.o $(FUZZ_HARNESS_OBJ) $(LIB)
	$(CC) $(CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_HARNESS_OBJ) $(LIB) $(LDLIBS)
# The same target driven by replay.c, in any build.
$(BUILD)/tests/fuzz/replay_%: $(BUILD)/tests/fuzz/fuzz_%.o $(BUILD)/tests/fuzz/replay.o \
                              $(FUZZ_HARNESS_OBJ) $(LIB)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/tests/fuzz/replay.o $(FUZZ_HARNESS_OBJ) $(LIB) $(LDLIBS)

fuzz-replay: $(REPLAYS)
	@for t in $(FUZZ_TARGETS); do \
	  $(BUILD)/tests/fuzz/replay_$$t tests/fuzz/corpus/$$t || exit 1; \
	done

fuzz: deps-fuzz
	$(MAKE) BUILD=build-fuzz CC=$(FUZZ_CC) SAN='$(FUZZ_SAN)' DEBUG=1 OPT='-O1 -g' \
	  $(FUZZ_TARGETS:%=build-fuzz/tests/fuzz/fuzz_%)
	@sh tests/fuzz/seeds.sh $(FUZZ_SHARED) $(ONNX_TESTDATA) build-fuzz/corpus $(FUZZ_TARGETS)
	@mkdir -p build-fuzz/artifacts; status=0; \
	for t in $(FUZZ_TARGETS); do \
	  echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
	  log=build-fuzz/fuzz-$$t.log; rm -f build-fuzz/fuzz-0.log; \
	  dict=; if [ -f tests/fuzz/$$t.dict ]; then dict=-dict=../tests/fuzz/$$t.dict; fi; \
	  (cd build-fuzz && $(FUZZ_ENV) ./tests/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) \
	    -timeout=30 -rss_limit_mb=3072 -print_final_stats=1 -artifact_prefix=artifacts/$$t- \
	    $$dict $(FUZZ_ARGS) corpus/$$t) >$$log 2>&1 || status=1; \
	  if [ -f build-fuzz/fuzz-0.log ]; then cat build-fuzz/fuzz-0.log >>$$log; fi; \
	  grep -E '^#[0-9]+' $$log | tail -n 1; \
	  grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' $$log \
	    | awk '!seen[$$0]++' | tr '\n' ' '; echo; \
	  if grep -qE 'ERROR: [A-Za-z]+Sanitizer|ERROR: libFuzzer|runtime error:|^fuzz: ' $$log; then \
	    status=1; \
	    grep -E 'ERROR: [A-Za-z]+Sanitizer|ERROR: libFuzzer|runtime error:|^fuzz: |Test unit written' $$log; \
	  fi; \
	done; \
	if [ $$status -ne 0 ]; then echo "fuzz: findings (build-fuzz/fuzz-<target>.log, build-fuzz/artifacts/)"; exit 1; fi; \
	echo "fuzz: $(words $(FUZZ_TARGETS)) targets, $(FUZZ_SECONDS) s each, no finding"

# ---- the example application ------------------------------------------------------
# Deploys schemas/shop into build/demo/shop with a generated model and 40
# products, feeds them and prints three ranked queries.
DEMO_APP := $(BUILD)/demo/shop
demo: deps
	$(MAKE) all $(TOOLS)
	rm -rf $(DEMO_APP)
	mkdir -p $(DEMO_APP)
	cp -R schemas/shop/schemas $(DEMO_APP)/
	$(BUILD)/tests/mkshop $(DEMO_APP)
	$(CLI) deploy $(DEMO_APP)
	$(CLI) feed $(DEMO_APP) $(DEMO_APP)/feed.jsonl
	sh tests/demo.sh $(CLI) $(DEMO_APP)

# ---- comparison with ONNX Runtime ---------------------------------------------------
# Needs ../shared/peer (ONNX Runtime through its Node.js package).  `make peer`
# sets it up in $(BUILD)/peer: a fresh copy, its npm packages (its .npmrc skips
# onnxruntime-node's download: the CPU build is bundled) and the models that
# mkmodels.js generates into $(BUILD)/peer/models.  PEER_ARGS go to
# mkmodels.js (e.g. PEER_ARGS='--only mlp_ranker').  check-peer and bench use it.
PEER_SRC  ?= ../shared/peer
PEER_ARGS ?=
peer:
	@if [ ! -d $(PEER_SRC) ]; then echo "peer: $(PEER_SRC) not found"; exit 1; fi; \
	set -e; \
	if [ -d $(BUILD)/peer ]; then chmod -R u+w $(BUILD)/peer; rm -rf $(BUILD)/peer; fi; \
	mkdir -p $(BUILD); \
	cp -R $(PEER_SRC) $(BUILD)/peer; \
	chmod -R u+w $(BUILD)/peer; \
	(cd $(BUILD)/peer && npm ci --no-audit --no-fund); \
	node $(BUILD)/peer/mkmodels.js $(BUILD)/peer/models $(PEER_ARGS)

# Deploy every application of Vespa's sample applications (when
# $(VESPA_APPS) exists) unchanged and count the schemas that deploy.
VESPA_APPS ?= ../shared/vespa-apps
vespa-apps: $(CLI)
	@sh tests/vespa_apps.sh $(VESPA_APPS) $(CLI)

# Follow the sample applications' READMEs and Vespa's tutorials for them
# (tests/vespa_readmes.sh: deploy, feed, then their requests through
# `strata test` with tests/readmes/NAME/), when $(VESPA_APPS) exists.
vespa-readmes: $(CLI) $(TOOLS)
	@VESPA_APPS=$(VESPA_APPS) STRATA=$(CLI) MKSHOP=$(BUILD)/tests/mkshop sh tests/vespa_readmes.sh

# check-peer runs the conformance runner (built by the conformance rule) on the
# generated cases, with --compare-opt: each data set also runs on the model
# loaded with the optimizations off, and the optimized outputs may not move
# from those by more than 1e-4 relative.  Fails when any case fails, errs or
# is not implemented (read from the runner's JSON summary).  The cases run
# again through compiled contexts (--via-context), which must agree as well.
check-peer:
	@if [ ! -d $(PEER_SRC) ]; then echo "check-peer: $(PEER_SRC) not found, skipped"; exit 0; fi; \
	set -e; \
	$(MAKE) --no-print-directory peer; \
	$(MAKE) $(BUILD)/tests/conformance; \
	status=0; \
	$(BUILD)/tests/conformance --rtol 1e-4 --atol 1e-4 --compare-opt $(BUILD)/peer/models/cases \
	  >$(BUILD)/peer/conformance.log 2>&1 || status=$$?; \
	cat $(BUILD)/peer/conformance.log; \
	tail -n 1 $(BUILD)/peer/conformance.log \
	  | jq -e '.total > 0 and .fail + .error + .not_implemented == 0' >/dev/null 2>&1 || status=1; \
	$(BUILD)/tests/conformance --rtol 1e-4 --atol 1e-4 --via-context $(BUILD)/peer/models/cases \
	  >$(BUILD)/peer/conformance-ctx.log 2>&1 || status=$$?; \
	printf 'through compiled contexts: '; tail -n 1 $(BUILD)/peer/conformance-ctx.log; \
	tail -n 1 $(BUILD)/peer/conformance-ctx.log \
	  | jq -e '.total > 0 and .fail + .error + .not_implemented == 0' >/dev/null 2>&1 || status=1; \
	if [ $$status -ne 0 ]; then echo "check-peer: some cases failed (see above)"; exit 1; fi; \
	echo "check-peer: every case agrees with ONNX Runtime and with the unoptimized graph, directly and through compiled contexts"

# ---- benchmarks -------------------------------------------------------------------------
# make bench runs the cases below in turn, each a target of its own:
# bench-runtime, bench-text, bench-serve, bench-http, bench-ann and bench-match.
# BENCH_ONLY names the ones to run (make bench BENCH_ONLY=text, or BENCH_ONLY='text ann').
# The peers' Debian packages come from deps-bench only (never make test).
BENCH_CASES  := runtime text serve http ann match
BENCH_ONLY   ?=
bench:
	@for c in $(or $(BENCH_ONLY),$(BENCH_CASES)); do \
	  $(MAKE) --no-print-directory bench-$$c || exit 1; \
	done

# bench-runtime: Strata's runtime against ONNX Runtime on every model mkmodels.js
# generates, both timed alternately in the same run, one thread each
# (bench/README.md says what is measured and how).  Where the peer cannot be
# set up (no $(PEER_SRC), npm or mkmodels.js failing) that is not an error:
# mkbench writes models of the same graphs and shapes (its own weights) to
# $(BUILD)/bench/models, and the driver times Strata alone on them, saying
# "peer not found: ORT figures skipped".  A case where Strata fails still
# fails the target.  After the inference cases the driver times session
# creation: each model is compiled once into a context (ep.context_enable=1)
# in the scratch folder $(BENCH_CTX), then its loads are timed against
# ORT's session creation (it reports its goals, it does not assert them).
# BENCH_ARGS go to the driver (e.g. BENCH_ARGS='--scale 0.1' for a quick
# look, BENCH_ARGS='--only mlp_ranker', '--no-loads', '--loads-only').
# The int8 cases run bench/quantize.js's quantization of two MiniLM models
# (ONNX Runtime's quantize_dynamic rules), made beside the peer's models;
# without the peer they are skipped.
# Then qps times whole queries of a two-phase profile through the engine
# (100k documents of 384 floats, mlp_ranker over the best 100) with the
# pools on and off; its application and store live in $(QPS_DIR), reused
# from run to run.  QPS_ARGS go to it (e.g. QPS_ARGS='--docs 10000').
# bench/common.c: what every benchmark program links (bench/common.h).
BENCH_COMMON := $(BUILD)/bench/common.o
BENCH        := $(BUILD)/bench/bench
BENCH_SRC    := bench/bench.c bench/loads.c bench/peak.c bench/common.c
BENCH_OBJ    := $(BENCH_SRC:%.c=$(BUILD)/%.o)
MKBENCH      := $(BUILD)/bench/mkbench
BENCH_MODELS := $(BUILD)/bench/models
BENCH_CTX    := $(BUILD)/bench-ctx
BENCH_ARGS   ?=
QPS          := $(BUILD)/bench/qps
QPS_DIR      := $(BUILD)/bench/qps-app
QPS_ARGS     ?=
# rerank times a MiniLM cross-encoder second phase over 100 hits on one
# search thread and on 2 (--threads T); RERANK_ARGS go to it.
RERANK       := $(BUILD)/bench/rerank
RERANK_DIR   := $(BUILD)/bench/rerank-app
RERANK_ARGS  ?=
$(BENCH): $(BENCH_OBJ) $(LIB)
	$(CC) $(CFLAGS) -o $@ $(BENCH_OBJ) $(LIB) $(LDLIBS)
$(QPS): $(BUILD)/bench/qps.o $(BENCH_COMMON) $(LIB)
	$(CC) $(CFLAGS) -o $@ $< $(BENCH_COMMON) $(LIB) $(LDLIBS)
$(RERANK): $(BUILD)/bench/rerank.o $(BENCH_COMMON) $(LIB)
	$(CC) $(CFLAGS) -o $@ $< $(BENCH_COMMON) $(LIB) $(LDLIBS)
# Linked like mkshop: the model builder alone.
$(MKBENCH): $(BUILD)/bench/mkbench.o $(BUILD)/tests/modelbuild.o $(LIB)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/tests/modelbuild.o $(LIB) $(LDLIBS)
# One mkbench run writes all four models (deterministic: rebuilt only when
# mkbench changes).
$(BENCH_MODELS)/mlp_ranker.onnx $(BENCH_MODELS)/minilm_l6_cross.onnx \
$(BENCH_MODELS)/minilm_l6_cross_decomposed.onnx $(BENCH_MODELS)/minilm_l6_embed.onnx &: $(MKBENCH)
	@mkdir -p $(BENCH_MODELS)
	@echo "mkbench: writing the benchmark's models to $(BENCH_MODELS)"
	@$(MKBENCH) $(BENCH_MODELS)
bench-runtime: $(BENCH) $(MKBENCH) $(QPS) $(RERANK)
	@if [ -d $(PEER_SRC) ] && $(MAKE) --no-print-directory peer; then \
	  for m in minilm_l6_cross minilm_l6_embed; do \
	    [ ! -f $(BUILD)/peer/models/$$m.onnx ] || node bench/quantize.js $(BUILD)/peer \
	      $(BUILD)/peer/models/$$m.onnx $(BUILD)/peer/models/$${m}_int8.onnx || exit 1; \
	  done; \
	  $(BENCH) --peer $(BUILD)/peer --ctx-dir $(BENCH_CTX) $(BENCH_ARGS) $(BUILD)/peer/models; \
	else \
	  echo "bench: no peer set up from $(PEER_SRC): timing Strata alone on $(BENCH_MODELS)"; \
	  $(MAKE) -s --no-print-directory $(BENCH_MODELS)/mlp_ranker.onnx && \
	  $(BENCH) --ctx-dir $(BENCH_CTX) $(BENCH_ARGS) $(BENCH_MODELS); \
	fi
	@$(MAKE) -s --no-print-directory $(BENCH_MODELS)/mlp_ranker.onnx
	@$(QPS) $(QPS_ARGS) $(BENCH_MODELS)/mlp_ranker.onnx $(QPS_DIR)
	@$(MAKE) -s --no-print-directory $(RERANK)
	@$(RERANK) $(RERANK_ARGS) $(BENCH_MODELS)/minilm_l6_cross.onnx $(RERANK_DIR)

# bench-gemm: the GEMM alone (bench/gemmbench.c) on the models' shapes, in
# GFLOP/s and as a share of the core's FMA peak; not one of make bench's
# cases.  GEMM_ARGS go to it (e.g. GEMM_ARGS='128x384x1536:gelu --reps 31').
GEMMBENCH := $(BUILD)/bench/gemmbench
GEMM_ARGS ?=
$(GEMMBENCH): $(BUILD)/bench/gemmbench.o $(BUILD)/bench/peak.o $(BENCH_COMMON) $(LIB)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)
bench-gemm: $(GEMMBENCH)
	@$(GEMMBENCH) $(GEMM_ARGS)

# The text case (bench/textbench.c; bench/README.md): a generated corpus of
# 100,000 documents fed into Strata, Xapian and SQLite FTS5, then top-10
# OR and weakAnd queries of 1, 3 and 8 terms on each, in the same run.
# Its programs are built once deps-bench has installed the peers' headers.
# TEXT_ARGS go to the driver (e.g. TEXT_ARGS='--docs 20000 --rounds 2' for
# a quick look).
TEXTBENCH   := $(BUILD)/bench/textbench
TEXT_XAPIAN := $(BUILD)/bench/text_xapian
TEXT_DIR    := $(BUILD)/bench/text
TEXT_ARGS   ?=
$(TEXTBENCH): $(BUILD)/bench/textbench.o $(BUILD)/bench/textgen.o $(BENCH_COMMON) $(LIB)
	$(CC) $(CFLAGS) -o $@ $(filter %.o,$^) $(LIB) $(LDLIBS) -lsqlite3
$(TEXT_XAPIAN): bench/text_xapian.cc
	@mkdir -p $(dir $@)
	$(CXX) $(OPT) -Wall -Wextra -o $@ $< -lxapian
bench-text: deps-bench
	@$(MAKE) --no-print-directory $(TEXTBENCH) $(TEXT_XAPIAN)
	@$(TEXTBENCH) --xapian $(TEXT_XAPIAN) $(TEXT_ARGS) $(TEXT_DIR)

# bench-serve: strata serve under wrk (bench/serve.sh): searches without and
# with the model, and document gets; the model's searches at 1 and 2
# threads (SERVE_REPS runs each, medians, scaling efficiency); puts over
# HTTP; SERVE_SECONDS per case.  Its application lives in
# $(BUILD)/bench/serve-app, reused from run to run.
SERVE_SECONDS ?= 10
SERVE_REPS ?= 3
bench-serve: deps-bench $(CLI) $(TOOLS)
	@sh bench/serve.sh $(CLI) $(BUILD)/tests/mkshop $(BUILD)/bench/serve-app $(SERVE_SECONDS) \
		$(SERVE_REPS)

# bench-http: the HTTP library chosen by measurement (bench/http.sh): the
# same tiny service on libmicrohttpd and on h2o (bench/httpbench.c), and
# strata serve's own answer, under wrk (HTTP/1.1) and h2load (HTTP/2), 1 and
# 2 server threads; HTTP_SECONDS per case, HTTP_ROUNDS rounds.  httpbench
# is built once deps-bench has installed h2o.
HTTPBENCH     := $(BUILD)/bench/httpbench
HTTP_SECONDS  ?= 5
HTTP_ROUNDS   ?= 3
$(HTTPBENCH): $(BUILD)/bench/httpbench.o $(BENCH_COMMON) $(LIB)
	$(CC) $(CFLAGS) -o $@ $< $(BENCH_COMMON) $(LIB) $(LDLIBS) -lmicrohttpd \
	  $$(pkg-config --libs libh2o-evloop) -lssl -lcrypto
bench-http: deps-bench $(CLI)
	@$(MAKE) --no-print-directory $(HTTPBENCH)
	@mkdir -p $(BUILD)/bench/http
	@sh bench/http.sh $(HTTPBENCH) $(CLI) $(BUILD)/bench/http $(HTTP_SECONDS) $(HTTP_ROUNDS)

# The ANN case (bench/ann.c): clustered float vectors, Strata's HNSW graph
# against hnswlib and FAISS's HNSW (driven from C++ by bench/ann_peer.cc,
# their Debian packages installed by make deps-bench) on the same files with
# the same M and ef, one thread each, their searches alone timed: build
# time, index bytes, open time, recall@10 and queries per second per
# exploreAdditionalHits, and at recall@10 0.95.  hnswlib is a header
# library: it is compiled here for this CPU (-march=native), as Strata's
# kernels are chosen for it.  ANN_ARGS go to it (default 100k x 128; e.g.
# ANN_ARGS='--n 1000000' or '--dim 768').
ANN          := $(BUILD)/bench/ann
ANN_PEER     := $(BUILD)/bench/ann_peer
ANN_ARGS     ?=
$(ANN): $(BUILD)/bench/ann.o $(BENCH_COMMON) $(LIB)
	$(CC) $(CFLAGS) -o $@ $< $(BENCH_COMMON) $(LIB) $(LDLIBS)
$(ANN_PEER): bench/ann_peer.cc
	@mkdir -p $(dir $@)
	$(CXX) -O3 -march=native -std=c++17 -Wall -Wextra -fopenmp -o $@ $< -lfaiss -lblas -llapack
bench-ann: deps-bench
	@$(MAKE) --no-print-directory $(ANN) $(ANN_PEER)
	@$(ANN) --dir $(BUILD)/bench/ann-data --peer $(ANN_PEER) $(ANN_ARGS)

# The match case (bench/matchbench.c; bench/README.md): one schema (a text
# field with bm25, an int attribute with fast-search) built from generated
# documents at 100,000 and at 1,000,000, then queries of one hit each (a word
# of one document; that word and a word of half the corpus; a bucket and
# that word) timed at both sizes: a query's cost should follow its answer,
# not the corpus.  No peer.  Its applications live in $(MATCH_DIR), built
# afresh each run.  MATCH_ARGS go to the driver (e.g. MATCH_ARGS='--docs
# 10000,100000 --rounds 2' for a quick look).
MATCHBENCH := $(BUILD)/bench/matchbench
MATCH_DIR  := $(BUILD)/bench/match
MATCH_ARGS ?=
$(MATCHBENCH): $(BUILD)/bench/matchbench.o $(BENCH_COMMON) $(LIB)
	$(CC) $(CFLAGS) -o $@ $< $(BENCH_COMMON) $(LIB) $(LDLIBS)
bench-match: $(MATCHBENCH)
	@$(MATCHBENCH) $(MATCH_ARGS) $(MATCH_DIR)

# ---- install and clean ------------------------------------------------------------------
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include
	install -m 755 $(CLI) $(DESTDIR)$(PREFIX)/bin/strata
	install -m 644 $(LIB) $(DESTDIR)$(PREFIX)/lib/libstrata.a
	install -m 644 include/strata.h include/strata_defs.h $(DESTDIR)$(PREFIX)/include/

clean:
	@if [ -d $(BUILD)/peer ]; then chmod -R u+w $(BUILD)/peer; fi
	rm -rf $(BUILD) build-asan build-fuzz

# ---- ONNX conformance runner (tests/conformance.c) -----------------------------------
# `make conformance` runs the ONNX node, simple and PyTorch suites from libonnx-testdata;
# build/tests/conformance also takes any folder of cases (see its header).
ONNX_TESTDATA ?= /usr/share/libonnx-testdata/data
CONFORMANCE   := $(BUILD)/tests/conformance
$(CONFORMANCE): $(BUILD)/tests/conformance.o $(LIB)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDLIBS)

# The suites must pass at least this many cases (the counts reached so far:
# a case that stops passing is a regression).  Each suite's full report goes
# to $(BUILD)/conformance-<suite>.log; what did not pass and the totals are
# printed.  A crash in any case fails the run whatever the counts, and so
# does a tensor whose shape differs from the one inferred at load.  Each
# suite then runs again through compiled contexts (--via-context: every
# model compiled, written, mapped back and run), with the same minimum.
CONF_MIN_node   ?= 917
CONF_MIN_simple ?= 23
CONF_MIN_pytorch-converted ?= 82
CONF_MIN_pytorch-operator  ?= 35
CONF_SUITES     := node simple pytorch-converted pytorch-operator
.PHONY: conformance
conformance: $(CONFORMANCE)
	@status=0; for s in $(CONF_SUITES); do \
	  min=$$(case $$s in node) echo $(CONF_MIN_node);; simple) echo $(CONF_MIN_simple);; \
	    pytorch-converted) echo $(CONF_MIN_pytorch-converted);; \
	    pytorch-operator) echo $(CONF_MIN_pytorch-operator);; esac); \
	  $(CONFORMANCE) --check-shapes --expect-pass $$min $(ONNX_TESTDATA)/$$s >$(BUILD)/conformance-$$s.log 2>&1 \
	    || { echo "conformance: suite $$s below $$min passes, or a case crashed"; status=1; }; \
	  grep -E '^(fail|error|not_implemented|random) ' $(BUILD)/conformance-$$s.log | cut -c1-160; \
	  tail -n 1 $(BUILD)/conformance-$$s.log; \
	  $(CONFORMANCE) --check-shapes --via-context --expect-pass $$min $(ONNX_TESTDATA)/$$s \
	    >$(BUILD)/conformance-$$s-ctx.log 2>&1 \
	    || { echo "conformance: suite $$s through compiled contexts below $$min passes, or a case crashed"; status=1; }; \
	  printf 'through compiled contexts: '; tail -n 1 $(BUILD)/conformance-$$s-ctx.log; \
	done; exit $$status
