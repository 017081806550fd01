// Package workload decides what each request asks for: the prompt, its
// length in tokens and how that length was counted, and the output length.
// A Workload builds requests from Options in one of three ways:
//
//   - synthetic text: English-looking prose, words drawn by a Zipf-like law
//     from an embedded list of 3,174 common words, with capitals,
//     punctuation, quoted speech, compounds, sentences and paragraphs of
//     varying length, and now and then a number: about 1.29 tokens a word
//     by OpenAI's cl100k_base and o200k_base, as English prose is by the
//     tokenizers of Llama 3 and Qwen;
//   - a corpus: random windows of any text file (Options.Corpus);
//   - a dataset: ShareGPT JSON, JSON Lines of prompts, or JSON Lines of
//     OpenAI chat requests (Options.Dataset), streamed with one record in
//     memory at a time, filtered by length and sampled.
//
// Generated prompts start with the shared prefix, if any (SharedPrefix
// tokens every prompt shares on purpose; PrefixGroups different ones,
// request i starting with the (i mod PrefixGroups)-th), then a part of
// their own (the marker r<i>), so that a prefix cache cannot serve the
// rest.
//
// # Reuse on purpose: traces and conversations
//
// A Mooncake-format trace (ReadTrace, Options.Trace: JSON Lines of
// timestamp ms, input_length, output_length, hash_ids) gives each request's
// lengths and prompt blocks: a block of BlockSize tokens is the same text
// for the same hash id, so requests that share a hash id share that prefix
// block exactly; Trace.Arrivals are the send times and Trace.Stats the
// rate, lengths and prefix reuse. Conversations (Options.Turns generated,
// Options.Conversations a dataset's) are sent turn by turn through Turn,
// each turn carrying the whole history before it (with OwnAnswers, the
// server's answers in place of the replies); a raw route's prompt ends
// with "assistant:", so the answer continues it and the next turn starts
// with both, as a server that caches its replies finds them. Everything is
// the same for the same seed and request index.
//
// With a Tokenizer a generated prompt asked for N tokens is exactly N by it
// (record.SourceTokenizer); without one lengths are estimated by
// EstimateTokens and marked record.SourceEstimate.
//
//	in, err := workload.ParseLengths("512:lognormal:0.6")
//	w, err := workload.New(workload.Options{Input: in, Output: workload.Fixed(256), Seed: 1})
//	w.Prepare(0, 100) // before the stage starts
//	req := w.Request(0)
//
// # Lengths
//
// ParseLengths reads a length distribution, in tokens:
//
//	512                  always 512
//	512:lognormal:0.6    log-normal with median 512 and sigma 0.6
//	512:normal:64        normal with mean 512 and standard deviation 64
//	100-2000             uniform from 100 to 2000, both included
//	uniform:100:2000     the same
//	@lengths.txt         drawn from the file's lengths, one whole number a
//	                     line (blank lines and # comments skipped)
//
// Samples are rounded and clamped to [1, MaxLength] (1,048,576), and each
// request's is drawn from a generator seeded by (seed, index).
//
// # Datasets
//
// The format is named (FormatShareGPT, FormatPrompts, FormatChat) or
// detected from the content: a first non-space byte '[' is ShareGPT;
// otherwise the first line's keys decide: "conversations" (ShareGPT, one
// conversation a line), "messages" (chat) or "prompt" (prompts).
//
// In ShareGPT the first human turn is the prompt and the reply that follows
// it (system turns between are passed over) gives the output length, as in
// vLLM's and SGLang's benchmarks; conversations without one are skipped and
// counted. Chat messages and tools go to the chat endpoint unchanged
// (record.Request.Messages, Tools); other endpoints get the conversation
// flattened (Flatten). Unknown fields are ignored; a field of the wrong
// type stops the load with its file, line and path:
//
//	data.jsonl:17: field "messages[2].role": want a string
//
// # Memory
//
// A dataset is sampled once, by New, keeping Options.Requests records
// (reservoir sampling) whatever the file's size; one record may be at most
// MaxRecordBytes. Generated prompts are built by Prepare for one stage at a
// time, before it starts, and replaced by the next Prepare.
//
// Synthetic is the older generator: words from a fixed list of 300, one
// word counted as one token. It is kept as it is for its callers.
package workload
