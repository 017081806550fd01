package workload

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tokperf/tokperf/internal/infile"
	"github.com/tokperf/tokperf/internal/record"
)

// Options describe a workload. The zero value of each field is a sensible
// default except Input, which generated prompts need.
type Options struct {
	// Corpus, when set, is a text file whose random windows (the same for
	// the same seed and index) are the prompts' text instead of synthetic
	// prose.
	Corpus string
	// Dataset, when set, is a dataset file the requests come from; Format
	// names its format ("" detects it).
	Dataset string
	Format  Format
	// Trace, when set, is a Mooncake-format trace the requests come from,
	// one a line, in order: prompts of its lengths built from blocks of
	// BlockSize tokens (DefaultBlockSize when 0), the same hash id the
	// same text, so that requests sharing a prefix share its blocks.
	Trace     *Trace
	BlockSize int
	// Turns, when above 0, makes generated requests conversations of that
	// many turns: each turn's user message of Input tokens, each reply of
	// the turn's Output tokens, the history growing turn by turn.
	// Conversations makes a dataset's records conversations: a turn for
	// each user message, the dataset's replies in the history. OwnAnswers
	// puts the server's own answers in the history instead of the
	// generated or the dataset's replies.
	Turns         int
	Conversations bool
	OwnAnswers    bool
	// Agent, when set, makes generated requests agent sessions of its
	// shape (agent.go): Input is a user message's length, Output a turn's.
	// AgentTrace, when set, replays its sessions instead (agentreplay.go),
	// prompts built of blocks of BlockSize tokens (the trace's own when it
	// gives one).
	Agent      *Agent
	AgentTrace *AgentTrace
	// Tokenizer, when set, makes generated prompts exactly their sampled
	// length and counts dataset prompts; without one lengths are estimated
	// (EstimateTokens) and each request says so (record.SourceEstimate).
	Tokenizer Tokenizer
	// Input is the prompt length of generated prompts (ignored for a
	// dataset, whose prompts are as written; use Filter).
	Input Lengths
	// Output is the output length: for a dataset, of the records that give
	// none, or of all with OverrideOutput.
	Output         Lengths
	OverrideOutput bool
	// SharedPrefix is how many leading tokens every generated prompt
	// shares on purpose (to study a prefix cache); the rest of each prompt
	// starts with a part of its own, so nothing else can be served from a
	// prefix cache.
	SharedPrefix int
	// PrefixGroups, above 1, makes that many different shared prefixes of
	// SharedPrefix tokens (several system prompts), request i starting
	// with prefix i mod PrefixGroups.
	PrefixGroups int
	// Requests is how many dataset records to sample (0: all usable).
	Requests int
	Filter   Filter
	// Seed makes everything repeatable: the same options and seed give
	// the same requests.
	Seed        int64
	IgnoreEOS   bool
	Temperature float64
}

// Workload builds the requests of a run: generated prose (or windows of a
// corpus) of sampled lengths, or a sample of a dataset. Request is the
// runner's Source.
//
// Memory stays bounded for any number of requests: a dataset is sampled
// once, when the Workload is made, and holds Options.Requests items (all
// usable ones when 0); generated prompts are built by Prepare for one
// stage at a time, each Prepare replacing the last, and a request outside
// the prepared window is built when asked for (and counted by Late).
type Workload struct {
	o      Options
	seed   int64
	corpus io.ReaderAt // the corpus file, or its bytes when small
	file   io.Closer
	size   int64
	data   *Dataset
	trace  *Trace
	block  int
	texts  sync.Map     // hash id → the block's text (trace, with a tokenizer)
	cached atomic.Int64 // bytes of block text made, for MaxBlockCache

	prefix       string // the shared prefix, SharedPrefix tokens
	prefixTokens int
	groups       []string // the prefixes of PrefixGroups, the first prefix

	mu    sync.RWMutex
	first int
	built []record.Request
	late  atomic.Int64
}

// New makes a workload from o, reading and sampling a dataset now.
func New(o Options) (*Workload, error) { return NewContext(context.Background(), o) }

// NewContext is New with ctx to stop the dataset's read: a large file
// read while the user presses Ctrl-C returns ctx's error at once.
func NewContext(ctx context.Context, o Options) (*Workload, error) {
	w := &Workload{o: o, seed: o.Seed}
	switch {
	case o.Trace != nil && (o.Dataset != "" || o.Corpus != ""):
		return nil, errors.New("a workload takes a trace, a dataset or a corpus, not two")
	case o.AgentTrace != nil:
		w.block = cmp.Or(o.AgentTrace.BlockSize, o.BlockSize, DefaultBlockSize)
		return w, nil
	case o.Trace != nil:
		w.trace, w.block = o.Trace, o.BlockSize
		if w.block == 0 {
			w.block = DefaultBlockSize
		}
		if err := o.Trace.Check(w.block); err != nil {
			return nil, err
		}
		return w, nil
	case o.Dataset != "" && o.Corpus != "":
		return nil, errors.New("a workload takes a dataset or a corpus, not both")
	case o.Dataset != "":
		f, err := infile.OpenStream(ctx, o.Dataset, infile.Stream)
		if err != nil {
			return nil, fmt.Errorf("dataset: %w", err)
		}
		defer f.Close()
		w.data, err = LoadDataset(f, o.Dataset, LoadOptions{
			Format: o.Format, Tokenizer: o.Tokenizer, Sample: o.Requests, Seed: o.Seed, Filter: o.Filter, Conversations: o.Conversations,
		})
		if err != nil {
			return nil, err
		}
		return w, nil
	case o.Input.IsZero():
		return nil, errors.New("a generated workload needs an input length")
	case o.Corpus != "":
		f, err := infile.Open(ctx, o.Corpus, infile.Stream)
		if err != nil {
			return nil, fmt.Errorf("corpus: %w", err)
		}
		if f.Size() == 0 {
			f.Close()
			return nil, fmt.Errorf("corpus %s: the file is empty", o.Corpus)
		}
		w.corpus, w.file, w.size = f, f, f.Size()
		if w.size <= smallCorpus {
			// Held in memory: windows of a small file wrap round it many
			// times, a read each.
			data, err := io.ReadAll(f)
			f.Close()
			if err != nil {
				return nil, fmt.Errorf("corpus %s: %w", o.Corpus, err)
			}
			w.corpus, w.file, w.size = bytes.NewReader(data), nil, int64(len(data))
		}
	}
	if o.SharedPrefix > 0 {
		w.prefix, w.prefixTokens = w.text(-1, o.SharedPrefix, "")
		w.groups = []string{w.prefix}
		for g := 1; g < o.PrefixGroups; g++ {
			text, _ := w.textOf(streamPrefix+uint64(g), o.SharedPrefix, "")
			w.groups = append(w.groups, text)
		}
	}
	return w, nil
}

// Close releases the corpus file, if any.
func (w *Workload) Close() error {
	if w.file != nil {
		return w.file.Close()
	}
	return nil
}

// smallCorpus is the size up to which a corpus is read into memory.
const smallCorpus = 1 << 20

// The streams of the seeded generators, apart for each use.
const (
	streamPrefix = 1 << 62
	streamOutput = 0x0a7
)

// text is head followed by text for request i (-1: the shared prefix), in
// all exactly n tokens by the tokenizer, or n estimated tokens without one
// (fewer only if the corpus runs dry), and its count. A head of n tokens or
// more is returned whole.
func (w *Workload) text(i, n int, head string) (string, int) {
	stream := uint64(i)
	if i < 0 {
		stream = streamPrefix
	}
	return w.textOf(stream, n, head)
}

// textOf is text from the generator's stream.
func (w *Workload) textOf(stream uint64, n int, head string) (string, int) {
	count := EstimateTokens
	t := w.o.Tokenizer
	if t != nil {
		count = t.Count
	}
	if head != "" {
		if c := count(head); c >= n {
			return head, c
		}
	}
	src := w.body(stream)
	var b strings.Builder
	if head != "" {
		b.WriteString(head)
		b.WriteByte(' ')
	}
	if t == nil {
		for {
			before := b.Len()
			src(&b, n-EstimateTokens(b.String())+8)
			c, cut := cutEstimate(b.String(), n)
			if c > n {
				return b.String()[:cut], n
			}
			if b.Len() == before || b.Len() > 64*n+1<<16 {
				return b.String(), c
			}
		}
	}
	for range 32 {
		ids := t.Encode(b.String())
		if len(ids) > n {
			return fitIDs(t, b.String(), ids, n)
		}
		src(&b, n-len(ids)+8)
	}
	return fit(t, b.String(), n)
}

// body returns a function that appends about k more tokens of text to b:
// synthetic prose, or the corpus from a random place onwards, wrapping
// round at its end.
func (w *Workload) body(stream uint64) func(b *strings.Builder, k int) {
	if w.corpus == nil {
		g := newTextGen(w.seed, stream)
		return func(b *strings.Builder, k int) { g.write(b, max(k, 1)) }
	}
	r := rand.New(rand.NewPCG(uint64(w.seed), stream))
	off := r.Int64N(w.size)
	first := true
	return func(b *strings.Builder, k int) {
		for want := int64(max(k, 1))*8 + 256; want > 0; {
			at := off
			buf := make([]byte, min(want, w.size-at))
			n, err := w.corpus.ReadAt(buf, at)
			if n == 0 && err != nil {
				return // unreadable: the caller stops on no progress
			}
			want -= int64(n)
			chunk := buf[:n]
			if at+int64(n) >= w.size {
				off = 0 // wraps round
			} else {
				// Leave a rune cut at the end for the next read.
				chunk = chunk[:fullRunes(chunk)]
				off = at + int64(len(chunk))
			}
			if first {
				first = false
				if at > 0 {
					chunk = chunk[wordStart(chunk):]
				}
			}
			b.WriteString(strings.ToValidUTF8(string(chunk), ""))
			if off == 0 {
				b.WriteString("\n\n")
			}
		}
	}
}

// build makes request i.
func (w *Workload) build(i int) record.Request {
	req := record.Request{
		MaxTokens: w.o.Output.At(w.seed^streamOutput, i),
		IgnoreEOS: w.o.IgnoreEOS, Temperature: w.o.Temperature,
		PromptSource: w.source(),
	}
	if w.trace != nil {
		return w.traced(i, req)
	}
	if w.data != nil {
		it := &w.data.Items[i%len(w.data.Items)]
		req.Prompt, req.PromptTokens = it.Prompt, it.PromptTokens
		req.Messages, req.Tools = it.Messages, it.Tools
		if it.OutputTokens > 0 && !w.o.OverrideOutput {
			req.MaxTokens = it.OutputTokens
		}
		return req
	}
	n := w.o.Input.At(w.seed, i)
	own := "r" + strconv.Itoa(i)
	count := EstimateTokens
	if w.o.Tokenizer != nil {
		count = w.o.Tokenizer.Count
	}
	prefix, pt := w.prefix, w.prefixTokens
	if len(w.groups) > 1 {
		prefix = w.groups[i%len(w.groups)]
	}
	if ownN := count(own); pt > 0 && n < pt+ownN {
		// Too short for the whole shared part: keep what fits before the
		// request's own part.
		prefix = ""
		if k := n - ownN; k > 0 {
			prefix, _ = w.textOf(streamPrefix+uint64(i%max(len(w.groups), 1)), k, "")
		}
	}
	head := own
	if prefix != "" {
		head = prefix + " " + own
	}
	req.Prompt, req.PromptTokens = w.text(i, n, head)
	return req
}

func (w *Workload) source() record.TokenSource {
	if w.o.Tokenizer != nil {
		return record.SourceTokenizer
	}
	return record.SourceEstimate
}

// Prepare builds requests first to first+n-1 now, on every CPU, so that
// building them never delays a request of the stage that sends them; it
// replaces what an earlier Prepare built. Call it before each stage, not
// while one runs. A dataset's requests are ready from New: Prepare does
// nothing.
func (w *Workload) Prepare(first, n int) {
	if w.data != nil || n <= 0 {
		return
	}
	if w.trace != nil {
		n = w.tracePrepared(first, n)
	}
	built := make([]record.Request, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Go(func() {
			for {
				k := int(next.Add(1) - 1)
				if k >= n {
					return
				}
				built[k] = w.build(first + k)
			}
		})
	}
	wg.Wait()
	w.mu.Lock()
	w.first, w.built = first, built
	w.mu.Unlock()
}

// Request is the i-th request of the run: prepared, or built now if no
// Prepare covered i. Safe for concurrent use.
func (w *Workload) Request(i int) record.Request {
	if w.data != nil {
		return w.build(i)
	}
	w.mu.RLock()
	k := i - w.first
	if k >= 0 && k < len(w.built) {
		req := w.built[k]
		w.mu.RUnlock()
		return req
	}
	w.mu.RUnlock()
	w.late.Add(1)
	return w.build(i)
}

// Late counts the requests built when asked for, outside every Prepare.
func (w *Workload) Late() int { return int(w.late.Load()) }

// Info is what a report's header says about a workload.
type Info struct {
	Source    string // "synthetic", "corpus" or "dataset"
	File      string // the corpus or dataset file
	Format    Format // the dataset's format
	Tokenizer string // the tokenizer's name; "" when lengths are estimated
	Input     string // the input length distribution; "" for a dataset
	Output    string // the output length distribution; "" when the dataset's own
	// FileOutputs counts a dataset's records whose output length the file
	// gives and the requests use (a conversation's replies count too):
	// those requests ask for the file's length, not Output.
	FileOutputs int
	// SharedPrefix is the shared prefix's length in tokens, and
	// PrefixGroups how many different ones there are (0 or 1: one).
	SharedPrefix int
	PrefixGroups int
	Seed         int64
	// Requests is the number of distinct requests held (a dataset's
	// sample); 0 for generated prompts, which are all distinct.
	Requests int
	// BlockSize is a trace's prefix block, in tokens.
	BlockSize int
	// Turns is the turns of every generated conversation; Conversations
	// says a dataset's records are sent turn by turn; OwnAnswers that the
	// history holds the server's answers.
	Turns         int
	Conversations bool
	OwnAnswers    bool
	// Agent is the generated agent sessions' shape (ParseAgent), or an
	// agent trace's format; "" for neither.
	Agent string
	// Ceiling is an agent trace's prefix cache ceiling: the share of its
	// prompt tokens a cache that forgets nothing could serve.
	Ceiling float64
	Usable  int            // dataset records that passed the filter
	Skipped map[string]int // dataset records left out, by reason
	// Distinct counts a dataset's different prompts among its requests,
	// and PromptLengths and OutputLengths say how long they and the
	// lengths the file asks for are (quantiles of tokens), for a verdict
	// resting on the dataset to say what it had.
	Distinct      int
	PromptLengths string
	OutputLengths string
}

// Info describes w for a report.
func (w *Workload) Info() Info {
	in := Info{Input: w.o.Input.String(), Output: w.o.Output.String(), SharedPrefix: w.prefixTokens, Seed: w.seed, OwnAnswers: w.o.OwnAnswers}
	if len(w.groups) > 1 {
		in.PrefixGroups = len(w.groups)
	}
	if w.Conversational() {
		in.Conversations = true
		if w.data == nil {
			in.Turns = w.o.Turns
		}
		if w.o.Agent != nil {
			in.Agent, in.Turns = w.o.Agent.String(), 0
		}
		if t := w.o.AgentTrace; t != nil {
			in.Source, in.Agent, in.Turns, in.File, in.BlockSize, in.Requests = "agent trace", t.Format, 0, t.Name, w.block, t.Top
			in.Input, in.Output = "", ""
			in.Ceiling = t.Stats(w.block).Prefix.TokenReuse()
		}
	}
	if t := w.o.Tokenizer; t != nil {
		in.Tokenizer = t.Name()
	}
	switch {
	case w.trace != nil:
		in.Source, in.File, in.Input, in.Output = "trace", w.trace.Name, "", ""
		in.Requests, in.BlockSize, in.SharedPrefix = len(w.trace.Requests), w.block, 0
	case w.data != nil:
		in.Source, in.File, in.Format, in.Input = "dataset", w.data.Name, w.data.Format, ""
		in.Requests, in.Usable, in.Skipped = len(w.data.Items), w.data.Usable, w.data.Skipped
		in.Distinct, in.PromptLengths, in.OutputLengths = datasetLengths(w.data.Items)
		in.SharedPrefix = 0
		for i := range w.data.Items {
			if it := &w.data.Items[i]; !w.o.OverrideOutput && (it.OutputTokens > 0 || in.Conversations) {
				in.FileOutputs++
			}
		}
	case w.corpus != nil:
		in.Source, in.File = "corpus", w.o.Corpus
	case w.o.AgentTrace != nil:
	default:
		in.Source = "synthetic"
	}
	return in
}

// datasetLengths counts the distinct prompts of items and describes the
// prompts' lengths and the output lengths the file gives (those it
// gives), as "p10 12, p50 30, p90 120, max 1400 tokens".
func datasetLengths(items []Item) (distinct int, prompts, outputs string) {
	seen := map[string]bool{}
	var in, out []int
	for i := range items {
		it := &items[i]
		seen[it.Prompt] = true
		in = append(in, it.PromptTokens)
		if it.OutputTokens > 0 {
			out = append(out, it.OutputTokens)
		}
	}
	return len(seen), quantileText(in), quantileText(out)
}

// quantileText is "p10 a, p50 b, p90 c, max d tokens" of xs (nearest
// rank), or "" for none.
func quantileText(xs []int) string {
	if len(xs) == 0 {
		return ""
	}
	xs = slices.Clone(xs)
	slices.Sort(xs)
	at := func(p float64) int { return xs[int(math.Ceil(p*float64(len(xs))))-1] }
	return fmt.Sprintf("p10 %d, p50 %d, p90 %d, max %d tokens", at(0.1), at(0.5), at(0.9), xs[len(xs)-1])
}

// Input is the fixed input length, and whether it is fixed.
func (w *Workload) Input() (int, bool) { return w.o.Input.Fixed() }

// Output is the fixed output length, and whether it is fixed.
func (w *Workload) Output() (int, bool) { return w.o.Output.Fixed() }

// Describe is Info as one line for a report's header.
func (w *Workload) Describe() string { return w.Info().String() }

// String is the one-line description, such as
//
//	synthetic text (3174 words, Zipf), input 512:lognormal:0.6 tokens, output 256 tokens, lengths by tokenizer llama3, seed 1
func (in Info) String() string {
	var b strings.Builder
	switch in.Source {
	case "dataset":
		fmt.Fprintf(&b, "dataset %s (%s): %s", in.File, in.Format, record.Plural(in.Requests, "request"))
		if in.Requests < in.Usable {
			fmt.Fprintf(&b, " sampled of %d usable", in.Usable)
		}
		fmt.Fprintf(&b, ", %s", skippedText(in.Skipped))
		switch {
		case in.Output == "":
			b.WriteString(", output as the dataset says")
		default:
			fmt.Fprintf(&b, ", output as the dataset says, else %s tokens", in.Output)
		}
	case "agent trace":
		fmt.Fprintf(&b, "agent trace %s (%s): %s replayed turn by turn with the trace's lengths and waits, prompts of blocks of %d tokens (one text a hash id)", in.File, in.Agent, record.Plural(in.Requests, "session"), in.BlockSize)
		return b.String() + fmt.Sprintf(", seed %d", in.Seed)
	case "trace":
		fmt.Fprintf(&b, "trace %s: %s at their timestamps, prompts of blocks of %d tokens (one text a hash id), output as the trace says", in.File, record.Plural(in.Requests, "request"), in.BlockSize)
	case "corpus":
		fmt.Fprintf(&b, "corpus %s (random windows), input %s tokens", in.File, in.Input)
	default:
		fmt.Fprintf(&b, "synthetic text (%d words, Zipf), input %s tokens", len(table().vocab), in.Input)
	}
	if in.Source != "dataset" && in.Source != "trace" {
		if in.Output != "" {
			fmt.Fprintf(&b, ", output %s tokens", in.Output)
		}
		if in.SharedPrefix > 0 {
			fmt.Fprintf(&b, ", shared prefix %d tokens", in.SharedPrefix)
			if in.PrefixGroups > 1 {
				fmt.Fprintf(&b, " in %d groups (request i starts with prefix i mod %d)", in.PrefixGroups, in.PrefixGroups)
			}
		}
	}
	if in.Conversations {
		turns := "a turn a user message"
		if in.Turns > 0 {
			turns = fmt.Sprintf("%d turns", in.Turns)
		}
		history := "its replies"
		if in.Source != "dataset" {
			history = "generated replies of the output length"
		}
		if in.OwnAnswers {
			history = "the server's own answers"
		}
		if in.Agent != "" {
			fmt.Fprintf(&b, ", as agent sessions (%s; the history growing with %s, tool calls and their results)", in.Agent, history)
		} else {
			fmt.Fprintf(&b, ", as conversations (%s, the history growing with %s)", turns, history)
		}
	}
	if in.Tokenizer != "" {
		fmt.Fprintf(&b, ", lengths by tokenizer %s", in.Tokenizer)
	} else {
		b.WriteString(", lengths estimated (no tokenizer)")
	}
	fmt.Fprintf(&b, ", seed %d", in.Seed)
	return b.String()
}
